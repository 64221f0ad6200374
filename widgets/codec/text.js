// Text from outside the lab, as a reader should see it: the browser's copy of lab/text.py's
// visible(). Widgets only write text nodes (ui.js's h() and setText), so nothing in such text can
// run; what this adds is that nothing in it hides either. A control, a zero-width or bidi mark, a
// line or paragraph separator, or a space other than the plain one is spelt as an escape
// (\n, \x00, \u202e, \U000e0001), and a value cut at `limit` characters ends in a visible "…",
// never inside an escape. The golden vectors hold it to the Python function character for character.

// The Unicode categories lab.text.HIDDEN_CATEGORIES names, plus the other spaces (Zs).
const HIDDEN = /^[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}\p{Zl}\p{Zp}\p{Zs}]$/u;
const NAMED_ESCAPES = { "\n": "\\n", "\t": "\\t", "\r": "\\r" };
export const ELLIPSIS = "…";

function spelt(char) {
  if (char === " ") return char;
  if (Object.hasOwn(NAMED_ESCAPES, char)) return NAMED_ESCAPES[char];
  if (!HIDDEN.test(char)) return char;
  const code = char.codePointAt(0);
  const hex = code.toString(16);
  if (code <= 0xff) return `\\x${hex.padStart(2, "0")}`;
  return code <= 0xffff ? `\\u${hex.padStart(4, "0")}` : `\\U${hex.padStart(8, "0")}`;
}

export function visibleText(text, limit = null) {
  // for..of walks code points, as Python's str does, so an emoji is one character and a lone
  // surrogate is one hidden character
  const pieces = Array.from(String(text), spelt);
  const length = pieces.reduce((sum, piece) => sum + Array.from(piece).length, 0);
  if (limit === null || length <= limit) return pieces.join("");
  if (!(limit >= 1)) throw new RangeError(`a shown value needs room for at least the ellipsis; got limit ${limit}`);
  let kept = "";
  let used = 0;
  for (const piece of pieces) {
    const size = Array.from(piece).length;
    if (used + size > limit - 1) break;
    kept += piece;
    used += size;
  }
  return kept + ELLIPSIS;
}
