// Codes spelled out as the article writes them: a byte in hex, a field in binary digits.

/** A byte as two upper-case hex digits: 126 -> "0x7E". */
export function hexByte(byte) {
  return `0x${byte.toString(16).toUpperCase().padStart(2, "0")}`;
}

/** `value` as `width` binary digits, most significant first: binary(5, 4) -> "0101". */
export function binary(value, width) {
  return value.toString(2).padStart(width, "0");
}
