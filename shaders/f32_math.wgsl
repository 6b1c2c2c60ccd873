// f32 math to about 1 ulp with torch's special values (WGSL's builtins are only
// absolutely accurate, or off by several ulp, and a compiler may fold compare-and-select
// into min/max that drop NaN and -0): the functions the unary table's expressions call.
// A kernel asks for them with `library=("f32_math",)`: compose puts every section, in
// order, at the body's `$f32_math` line. They read the unary kernel's params (`a`, `flag`,
// `odd`: an op's scalars; `inf`, `nan`) and the `bits` snippet (is_nan, not_finite,
// less_bits).

// ==== sigmoid
// exp(-|v|) never overflows; fold the sign back in afterwards.
fn sigmoid(v: f32) -> f32 {
  let e = exp(-abs(v));
  if (v >= 0.0) {
    return 1.0 / (1.0 + e);
  }
  return e / (1.0 + e);
}

// ==== pow
// |v|^n for an integer n >= 0 by repeated squaring (a few roundings, no log/exp).
fn pow_uint(v: f32, n: u32) -> f32 {
  var base = v;
  var k = n;
  var acc = 1.0;
  loop {
    if ((k & 1u) == 1u) {
      acc = acc * base;
    }
    k = k >> 1u;
    if (k == 0u) {
      break;
    }
    base = base * base;
  }
  return acc;
}

// torch.pow(tensor, scalar): the special exponents torch computes by formula,
// exact integer powers (sign kept for odd ones), NaN for a negative base raised
// to a non-integer, 0 and inf for a zero base. An exponent of 2^24 or more (inf
// included: a Double beyond float32) is an even integer: the base's sign drops, and
// +-1 to an infinite power is 1, as C's pow gives.
fn pow_scalar(x: f32) -> f32 {
  let huge = abs(params.a) >= 16777216.0;
  let v = select(x, -x, huge && x < 0.0);
  if (huge && v == 1.0) { return 1.0; }
  let e = params.a;
  if (e == 0.0) { return 1.0; }
  if (e == 1.0) { return v; }
  if (e == 3.0) { return v * v * v; }
  if (e == 0.5) { return sqrt(v); }
  if (e == -0.5) { return 1.0 / sqrt(v); }
  if (e == -1.0) { return 1.0 / v; }
  if (e == -2.0) { return 1.0 / (v * v); }
  if (is_nan(v)) { return v; }
  if (params.flag == 1u) {
    var r = pow_uint(abs(v), u32(abs(e)));
    if (e < 0.0) {
      r = select(1.0 / r, params.inf, r == 0.0);
    }
    if (v < 0.0 && params.odd == 1u) {
      r = -r;
    }
    return r;
  }
  if (v < 0.0) { return params.nan; }
  if (v == 0.0) { return select(params.inf, 0.0, e > 0.0); }
  return exp2(e * log2(v));
}

// ==== round_half
// Round to nearest even at float16's precision, without shader-f16: drop 13 mantissa
// bits (normal range), or round to a multiple of 2^-24 (subnormal range); past the
// largest float16, infinity.
fn round_half(v: f32) -> f32 {
  if (not_finite(v)) {
    return v;
  }
  let bits = bitcast<u32>(v);
  var r: f32;
  if (abs(v) < 6.103515625e-05) {  // 2^-14
    r = round(v * 16777216.0) / 16777216.0;
  } else {
    r = bitcast<f32>((bits + 0xfffu + ((bits >> 13u) & 1u)) & 0xffffe000u);
  }
  if (abs(r) > 65504.0) {
    return select(params.inf, -params.inf, v < 0.0);
  }
  return r;
}

// ==== exp
// e^v to about 1 ulp (WGSL's exp may be off by 3 + 2|v| ulp): v = n ln2 + r with
// |r| <= ln2/2 (ln2 split in two so n ln2 is exact enough), e^r by its Taylor
// series to r^7, then 2^n applied in two halves so no step leaves f32's range.
fn exp_f32(v: f32) -> f32 {
  if (is_nan(v)) { return v; }
  if (v > 88.72283) { return params.inf; }  // above the f32 nearest ln(FLT_MAX)
  if (v < -103.97209) { return 0.0; }
  let n = round(v * 1.4426950408889634);
  let r = (v - n * 0.693145751953125) - n * 1.4286068203094173e-06;
  var p = 1.0 / 5040.0;
  p = p * r + 1.0 / 720.0;
  p = p * r + 1.0 / 120.0;
  p = p * r + 1.0 / 24.0;
  p = p * r + 1.0 / 6.0;
  p = p * r + 0.5;
  p = p * r + 1.0;
  p = p * r + 1.0;
  let k = i32(n);
  let half_k = k / 2;
  return ldexp(ldexp(p, half_k), k - half_k);
}

// ==== tanh
// tanh: odd; v + v^3 P(v^2) near 0 (no cancellation, tiny and signed zeros kept),
// 1 - 2 / (e^{2|v|} + 1) beyond (e overflowing to inf gives exactly 1).
fn tanh_f32(v: f32) -> f32 {
  let t = abs(v);
  if (t < 0.625) {
    let u = v * v;
    var p = 0.0023080441169440746;
    p = p * u - 0.00835998635739088;
    p = p * u + 0.021774962544441223;
    p = p * u - 0.05396023392677307;
    p = p * u + 0.13333310186862946;
    p = p * u - 0.3333333432674408;
    return select(v + v * u * p, v, v == 0.0);  // keeps -0
  }
  if (is_nan(v)) { return v; }
  let r = 1.0 - 2.0 / (exp_f32(2.0 * t) + 1.0);
  return select(r, -r, v < 0.0);
}

// ==== gelu
// e^{-v^2/2} with v^2 split as hi^2 + lo (hi: v's top 12 significand bits, so hi^2
// is exact): the rounding of v^2 (and of v/sqrt2) no longer scales the result.
fn exp_minus_half_square(v: f32) -> f32 {
  let hi = bitcast<f32>(bitcast<u32>(v) & 0xfffff000u);
  let lo = (v - hi) * (v + hi);
  return exp_f32(-0.5 * hi * hi) * exp_f32(-0.5 * lo);
}

// erfc(v/sqrt2) to about 1e-7 absolute (and a few 1e-7 relative while normal), with
// z = v/sqrt2: for |z| <= 1, 1 - z P(z^2); beyond, e^{-z^2} Q(1 / (1 + |z|/2)), and
// erfc(-z) = 2 - erfc(z). P and Q are least-squares fits to float64 erf and erfc.
fn erfc_scaled(v: f32) -> f32 {
  let z = 0.7071067811865476 * v;
  let t = abs(z);
  if (t <= 1.0) {
    let u = z * z;
    var p = -9.689741091278847e-06;
    p = p * u + 0.0001127473806263879;
    p = p * u - 0.0008485438884235919;
    p = p * u + 0.005221138708293438;
    p = p * u - 0.02686547487974167;
    p = p * u + 0.11283783614635468;
    p = p * u - 0.37612637877464294;
    p = p * u + 1.128379225730896;
    return 1.0 - z * p;
  }
  if (is_nan(z)) { return z; }
  var q = 0.0;
  if (t < 10.5) {  // beyond, erfc(t) < 2^-149
    let s = 1.0 / (1.0 + 0.5 * t);
    q = -0.055655475705862045;
    q = q * s + 0.1604863852262497;
    q = q * s - 0.0849626287817955;
    q = q * s - 0.14240120351314545;
    q = q * s + 0.08448415994644165;
    q = q * s + 0.03940493240952492;
    q = q * s + 0.18981508910655975;
    q = q * s + 0.24420171976089478;
    q = q * s + 0.28241586685180664;
    q = q * s + 0.28207239508628845;
    q = q * s + 6.821911142651516e-07;
    q = q * exp_minus_half_square(v);
  }
  return select(q, 2.0 - q, z < 0.0);
}

// gelu(v) = v/2 (1 + erf(v/sqrt2)) = v/2 erfc(-v/sqrt2): no cancellation for v < 0.
// As torch: -inf gives NaN (-inf * 0); +inf gives +inf.
fn gelu_erf(v: f32) -> f32 {
  if (v == params.inf) { return v; }
  return 0.5 * v * erfc_scaled(-v);
}

// The tanh form: v/2 (1 + tanh(u)), u = sqrt(2/pi) (v + 0.044715 v^3), with
// 1 + tanh(u) = 2 / (1 + e^{-2u}) (no cancellation for v < 0).
fn gelu_tanh(v: f32) -> f32 {
  let u = 0.7978845608028654 * (v + 0.044715 * v * v * v);
  return v / (1.0 + exp_f32(-2.0 * u));  // v = -inf: -inf / inf = NaN, as torch's -inf * 0
}

fn gelu(v: f32) -> f32 {
  if (params.flag == 1u) { return gelu_tanh(v); }
  return gelu_erf(v);
}

// ==== below_zero
// True for v < 0 (not -0, not NaN), tested on the bits so no compiler turns a select
// on it into a max that drops NaN or -0.
fn below_zero(v: f32) -> bool {
  let u = bitcast<u32>(v);
  return u > 0x80000000u && u <= 0xff800000u;
}

// ==== log
// torch.log to about 1 ulp (WGSL's log is only absolutely accurate near 1): v = m 2^e
// with m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact), s = f / (2 + f): log(m) =
// 2 atanh(s) = 2s + s R = f - (f^2/2 - s (f^2/2 + R)), R = 2z/3 + 2z^2/5 + ..., z = s^2.
// NaN below 0 (and for NaN), -inf at +-0, inf at inf.
fn log_f32(v: f32) -> f32 {
  if (is_nan(v) || below_zero(v)) { return params.nan; }
  var bits = bitcast<u32>(v);  // bit tests: a flushing adapter sees subnormals as 0
  if ((bits & 0x7fffffffu) == 0u) { return -params.inf; }
  if (bits == 0x7f800000u) { return v; }
  var e = 0;
  if (bits < 0x00800000u) {  // subnormal: normalise the mantissa with integer ops
    let shift = countLeadingZeros(bits) - 8u;
    bits = ((bits << shift) & 0x007fffffu) | 0x00800000u;  // as if exponent field 1
    e = -i32(shift);
  }
  e += i32(bits >> 23u) - 127;
  var m = bitcast<f32>((bits & 0x007fffffu) | 0x3f800000u);
  if (m > 1.4142135) {
    m = 0.5 * m;
    e += 1;
  }
  let f = m - 1.0;
  let s = f / (2.0 + f);
  let z = s * s;
  var r = 2.0 / 9.0;  // R = 2 atanh(s) / s - 2 to z^4 (z <= 0.0295: the rest < 1e-9)
  r = r * z + 2.0 / 7.0;
  r = r * z + 2.0 / 5.0;
  r = r * z + 2.0 / 3.0;
  r = r * z;
  let hfsq = 0.5 * f * f;
  let fe = f32(e);
  return fe * 0.693145751953125 + ((f - (hfsq - s * (hfsq + r))) + fe * 1.4286068203094173e-06);
}

// ==== sin_cos
// sin and cos to about 1 ulp (WGSL's are only absolutely accurate, and on some GPUs
// only near 0, or not at all for large v): v = n pi/2 + r with |r| <= pi/4, then the
// polynomials of sin and cos on r, picked by n mod 4.
struct Reduced {
  q: u32,  // n mod 4
  r: f32,
}

// |v| < 12868: pi/2 in three parts, the first two of 11 bits, so n times them is exact
// for n < 2^13 (Cody and Waite).
fn reduce_small(v: f32) -> Reduced {
  let n = round(v * 0.6366197466850281);
  let r = ((v - n * 1.5703125) - n * 0.0004837512969970703) - n * 7.549790126404332e-08;
  return Reduced(bitcast<u32>(i32(n)) & 3u, r);
}

// (hi, lo) words of a * b.
fn mul_wide(a: u32, b: u32) -> vec2<u32> {
  let a0 = a & 0xffffu;
  let a1 = a >> 16u;
  let b0 = b & 0xffffu;
  let b1 = b >> 16u;
  let p00 = a0 * b0;
  let p01 = a0 * b1;
  let p10 = a1 * b0;
  let mid = (p00 >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u),
                   (p00 & 0xffffu) | (mid << 16u));
}

// Any finite v (Payne and Hanek): |v| = m 2^(e-23) with m a 24-bit integer; only 96 bits
// of 2/pi matter to m 2^(e-23) 2/pi mod 4 (earlier ones give multiples of 4, later ones
// less than 2^-70): that product, in integers, gives n mod 4 and r / (pi/2).
fn reduce_large(v: f32) -> Reduced {
  // 2/pi in binary, two zero words first (bit k of 2/pi is bit k + 63 here)
  var t = array<u32, 10>(0u, 0u, 0xa2f9836eu, 0x4e441529u, 0xfc2757d1u, 0xf534ddc0u,
                         0xdb629599u, 0x3c439041u, 0xfe5163abu, 0xdebbc561u);
  let bits = bitcast<u32>(v) & 0x7fffffffu;
  let m = (bits & 0x007fffffu) | 0x00800000u;
  let start = (bits >> 23u) - 127u + 39u;  // the window's first bit: weight 2 in the product
  let j = start / 32u;
  let s = start % 32u;
  var w: array<u32, 3>;
  for (var i = 0u; i < 3u; i++) {
    w[i] = (t[j + i] << s) | select(0u, t[j + i + 1u] >> (32u - s), s > 0u);
  }
  let p0w = mul_wide(m, w[2]);
  let p1w = mul_wide(m, w[1]);
  let p1 = p1w.y + p0w.x;
  let p2 = m * w[0] + p1w.x + select(0u, 1u, p1 < p1w.y);
  var q = p2 >> 30u;
  var hi = (p2 << 2u) | (p1 >> 30u);  // the fraction of a quarter turn, 64 bits
  var lo = (p1 << 2u) | (p0w.y >> 30u);
  var sign = 1.0;
  if (hi >= 0x80000000u) {  // past half: round n up, r negative
    q = q + 1u;
    hi = ~hi;
    lo = ~lo + 1u;
    hi = hi + select(0u, 1u, lo == 0u);
    sign = -1.0;
  }
  let f = (f32(hi) + f32(lo) * 2.3283064365386963e-10) * 2.3283064365386963e-10;
  var red = Reduced(q & 3u, sign * f * 1.5707963267948966);
  if (v < 0.0) {
    red = Reduced((4u - red.q) & 3u, -red.r);
  }
  return red;
}

// sin(v) (shift 0) or cos(v) (shift 1) of finite v with |v| >= 2^-12.
fn sin_cos_quadrant(v: f32, shift: u32) -> f32 {
  var red: Reduced;
  if (abs(v) < 12868.0) {
    red = reduce_small(v);
  } else {
    red = reduce_large(v);
  }
  let r = red.r;
  let z = r * r;
  var sp = -1.9515295891e-4;
  sp = sp * z + 8.3321608736e-3;
  sp = sp * z - 1.6666654611e-1;
  let sin_r = r + r * z * sp;
  var cp = 2.443315711809948e-5;
  cp = cp * z - 1.388731625493765e-3;
  cp = cp * z + 4.166664568298827e-2;
  let cos_r = (1.0 - 0.5 * z) + z * z * cp;
  let q = (red.q + shift) & 3u;
  let w = select(sin_r, cos_r, (q & 1u) == 1u);
  return select(w, -w, q >= 2u);
}

fn sin_f32(v: f32) -> f32 {
  if (not_finite(v)) { return params.nan; }
  let t = abs(v);
  if (t < 2.44140625e-4) { return v; }  // 2^-12: sin v = v to f32 precision; keeps -0
  return sin_cos_quadrant(v, 0u);
}

fn cos_f32(v: f32) -> f32 {
  if (not_finite(v)) { return params.nan; }
  let t = abs(v);
  if (t < 2.44140625e-4) { return 1.0 - 0.5 * v * v; }
  return sin_cos_quadrant(v, 1u);
}

// ==== reciprocal
// 1 / v with the signed infinities of 1 / +-0 pinned down.
fn reciprocal_f32(v: f32) -> f32 {
  if ((bitcast<u32>(v) & 0x7fffffffu) == 0u) {
    return bitcast<f32>((bitcast<u32>(v) & 0x80000000u) | 0x7f800000u);
  }
  return 1.0 / v;
}

// ==== sign
// torch.sign: -1, 0 or 1; 0 for +-0 and for NaN (as torch computes it).
// On the bits: a subnormal is nonzero (a flushing adapter compares it equal to 0).
fn sign_f32(v: f32) -> f32 {
  let mag = bitcast<u32>(v) & 0x7fffffffu;
  if (mag == 0u || mag > 0x7f800000u) { return 0.0; }
  return select(1.0, -1.0, bitcast<u32>(v) >= 0x80000000u);
}

// ==== relu6_shift
// min(max(v + 3, 0), 6) / 6 (hardsigmoid); hardswish is v times it. NaN propagates.
fn relu6_shift(v: f32) -> f32 {
  return clamp_f32(v + 3.0, 0.0, 6.0) / 6.0;
}

// ==== silu
// silu(v) = v / (1 + e^-v), as torch: -inf gives NaN (-inf / inf), large negative v -0.
fn silu_f32(v: f32) -> f32 {
  return v / (1.0 + exp_f32(-v));
}

// ==== sqrt
// sqrt with IEEE special cases pinned down: NaN for v < 0, -0 for -0, inf for inf.
fn sqrt_f32(v: f32) -> f32 {
  if (v < 0.0) { return params.nan; }
  if (v == 0.0 || not_finite(v)) { return v; }
  return sqrt(v);
}
