// Exact float helpers: IEEE bit patterns, exact powers of two, frexp and numpy's rint, written so
// no step rounds where the Python codec does not.

const bitView = new DataView(new ArrayBuffer(8));

export function float64Bits(x) {
  bitView.setFloat64(0, x);
  return bitView.getBigUint64(0);
}

export function float32Bits(x) {
  bitView.setFloat32(0, x);
  return bitView.getUint32(0);
}

/** Exactly 2^n for an integer n (built from the bit pattern, so no pow() rounding can creep in). */
export function pow2(n) {
  if (n > 1023) return Infinity;
  if (n < -1074) return 0;
  if (n < -1022) return pow2(n + 64) * pow2(-64); // a subnormal: exact, since 2^n is representable
  bitView.setBigUint64(0, BigInt(n + 1023) << 52n);
  return bitView.getFloat64(0);
}

/** The exponent e of frexp(m) = (f, e), f in [0.5, 1), for a finite m >= 0; frexp(0) gives 0. */
export function frexpExponent(magnitude) {
  if (magnitude === 0) return 0;
  const biased = Number((float64Bits(magnitude) >> 52n) & 0x7ffn);
  if (biased === 0) return frexpExponent(magnitude * pow2(64)) - 64; // subnormal
  return biased - 1022;
}

/** numpy.rint: nearest integer, ties to even. */
export function roundHalfEven(value) {
  const below = Math.floor(value);
  const above = value - below; // exact: the fraction of a double is representable
  if (above > 0.5) return below + 1;
  if (above < 0.5) return below;
  return below % 2 === 0 ? below : below + 1;
}

export function signbit(x) {
  return x < 0 || Object.is(x, -0);
}
