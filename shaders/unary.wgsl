// Elementwise unary ops on contiguous tensors: one invocation per element, the
// flat index rebuilt from a grid that may be folded into two dimensions.

// The shader also has an f16 form (registry.shader_source): storage arrays and `elem`
// become f16; reads convert to f32, so the arithmetic stays f32.
alias elem = f32;

override wg_size: u32 = 256;
override op: u32 = 0u;  // 0 rsqrt, 1 sigmoid, 2 square, 3 pow by a scalar, 4 add a scalar,
                        // 5 round to the nearest float16 (float16 tensors live in f32),
                        // 6 tanh, 7 gelu (erf), 8 gelu (tanh form), 9 relu, 10 exp, 11 neg,
                        // 12 abs, 13 sqrt, 14 clamp to [a, b] (also hardtanh)

struct Params {
  numel: u32,
  a: f32,          // pow: the exponent; add: alpha * other; clamp: the lower bound
  int_exp: u32,    // pow: 1 when the exponent is an integer (|e| < 2^24)
  odd_exp: u32,    // pow: 1 when that integer is odd
  inf: f32,        // +inf and NaN from the host: WGSL has no literals for them
  nan: f32,
  b: f32,          // clamp: the upper bound (a missing bound is -inf / +inf)
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
@group(0) @binding(2) var<uniform> params: Params;

// NaN and inf tests on the bits: compilers may fold float comparisons with NaN.
fn not_finite(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) >= 0x7f800000u;
}

fn is_nan(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// exp(-|v|) never overflows; fold the sign back in afterwards.
fn sigmoid(v: f32) -> f32 {
  let e = exp(-abs(v));
  if (v >= 0.0) {
    return 1.0 / (1.0 + e);
  }
  return e / (1.0 + e);
}

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
// to a non-integer, 0 and inf for a zero base.
fn pow_scalar(v: f32) -> f32 {
  let e = params.a;
  if (e == 0.0) { return 1.0; }
  if (e == 1.0) { return v; }
  if (e == 3.0) { return v * v * v; }
  if (e == 0.5) { return sqrt(v); }
  if (e == -0.5) { return 1.0 / sqrt(v); }
  if (e == -1.0) { return 1.0 / v; }
  if (e == -2.0) { return 1.0 / (v * v); }
  if (is_nan(v)) { return v; }
  if (params.int_exp == 1u) {
    var r = pow_uint(abs(v), u32(abs(e)));
    if (e < 0.0) {
      r = select(1.0 / r, params.inf, r == 0.0);
    }
    if (v < 0.0 && params.odd_exp == 1u) {
      r = -r;
    }
    return r;
  }
  if (v < 0.0) { return params.nan; }
  if (v == 0.0) { return select(params.inf, 0.0, e > 0.0); }
  return exp2(e * log2(v));
}

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

// clamp and hardtanh as torch: a value below a is a, then one above b is b (so a > b
// gives b); NaN stays NaN; -0 is kept (it is not below 0).
fn clamp_f32(v: f32) -> f32 {
  if (is_nan(v)) { return v; }
  let r = select(v, params.a, v < params.a);
  return select(r, params.b, r > params.b);
}

// sqrt with IEEE special cases pinned down: NaN for v < 0, -0 for -0, inf for inf.
fn sqrt_f32(v: f32) -> f32 {
  if (v < 0.0) { return params.nan; }
  if (v == 0.0 || not_finite(v)) { return v; }
  return sqrt(v);
}

fn apply(v: f32) -> f32 {
  switch op {
    case 1u: { return sigmoid(v); }
    case 2u: { return v * v; }
    case 3u: { return pow_scalar(v); }
    case 4u: { return v + params.a; }
    case 5u: { return round_half(v); }
    case 6u: { return tanh_f32(v); }
    case 7u: { return gelu_erf(v); }
    case 8u: { return gelu_tanh(v); }
    case 9u: { return select(v, 0.0, v < 0.0); }  // relu: NaN and -0 pass through
    case 10u: { return exp_f32(v); }
    case 11u: { return bitcast<f32>(bitcast<u32>(v) ^ 0x80000000u); }
    case 12u: { return bitcast<f32>(bitcast<u32>(v) & 0x7fffffffu); }
    case 13u: { return sqrt_f32(v); }
    case 14u: { return clamp_f32(v); }
    default: { return 1.0 / sqrt(v); }
  }
}

@compute @workgroup_size(wg_size)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * wg_size;
  if (i < params.numel) {
    y[i] = elem(apply(f32(x[i])));
  }
}
