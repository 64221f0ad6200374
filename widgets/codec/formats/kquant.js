// What Q3_K and Q2_K share (Python lab.formats._kquant): 2-bit codes, four to a byte, in two
// chunks of 128 weights. qs byte 32c + l holds the four weights 128c + l + 32s, s = 0..3, at bits
// 2s + 1..2s: a column of weights 32 apart, not neighbours.
//
//   qs byte 32c + l:   bits 7..6         bits 5..4         bits 3..2         bits 1..0
//                      weight 128c+l+96  weight 128c+l+64  weight 128c+l+32  weight 128c+l

/** Where the 2-bit code of weight `lane` (0..255) sits in qs: {byte 0..63, shift 0, 2, 4 or 6}. */
export function kquantCrumbPlace(lane) {
  const chunk = Math.floor(lane / 128);
  const rest = lane % 128;
  return { byte: 32 * chunk + (rest % 32), shift: 2 * Math.floor(rest / 32) };
}

/** The 2-bit code of weight `lane` in qs bytes starting at block byte `start`. */
export function kquantCrumb(bytes, lane, start) {
  const place = kquantCrumbPlace(lane);
  return (bytes[start + place.byte] >> place.shift) & 3;
}
