// Elementwise unary ops on contiguous tensors: one invocation per element, the
// flat index rebuilt from a grid that may be folded into two dimensions.

// The shader also has an f16 form (registry.shader_source): storage arrays and `elem`
// become f16; reads convert to f32, so the arithmetic stays f32.
alias elem = f32;

override wg_size: u32 = 256;
override op: u32 = 0u;  // 0 rsqrt, 1 sigmoid, 2 square, 3 pow by a scalar, 4 add a scalar,
                        // 5 round to the nearest float16 (float16 tensors live in f32)

struct Params {
  numel: u32,
  a: f32,          // pow: the exponent; add: alpha * other
  int_exp: u32,    // pow: 1 when the exponent is an integer (|e| < 2^24)
  odd_exp: u32,    // pow: 1 when that integer is odd
  inf: f32,        // +inf and NaN from the host: WGSL has no literals for them
  nan: f32,
  _pad0: u32,
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

fn apply(v: f32) -> f32 {
  switch op {
    case 1u: { return sigmoid(v); }
    case 2u: { return v * v; }
    case 3u: { return pow_scalar(v); }
    case 4u: { return v + params.a; }
    case 5u: { return round_half(v); }
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
