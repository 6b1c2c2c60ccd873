// Elementwise ops whose operands and result differ in type (bool masks, comparisons,
// where, integer arithmetic), with NumPy broadcasting. `item` is generated per op and per
// operand types (ops/mixed.py): it loads a, b, c at the offsets below, as f32 for float
// tensors, i32 for int32/int64 and u32 (0 or 1) for bool, and stores out[i].
override wg_size: u32 = 256;

// Offsets of output element i in a, b and c (their strides are 0 on broadcast dims).
fn operand_offsets(i: u32) -> vec3<u32> {
  var rest = i;
  var offsets = vec3<u32>(0u, 0u, 0u);
  for (var d = params.rank; d > 0u; d -= 1u) {
    let size = at(params.out_shape, d - 1u);
    let coord = rest % size;
    rest = rest / size;
    offsets += coord * vec3<u32>(at(params.a_strides, d - 1u), at(params.b_strides, d - 1u),
                                 at(params.c_strides, d - 1u));
  }
  return offsets;
}

// div(rounding_mode="floor") on floats: the floor of the exact quotient, as torch's
// fmod-based rule gives it (x / y's rounding corrected by the fma remainder); x infinite
// gives NaN and a finite x over an infinite y gives 0 or -1 by the signs, as torch.
fn div_floor_f32(x: f32, y: f32) -> f32 {
  let q = x / y;
  if (y == 0.0 || is_nan(x) || is_nan(y)) {
    return q;  // IEEE: ±inf or NaN
  }
  if (not_finite(x)) {
    // NaN, from a runtime value (WGSL front ends refuse a constant NaN)
    return bitcast<f32>(0x7fc00000u | (bitcast<u32>(x) & 0u));
  }
  if (not_finite(y)) {
    return select(q, -1.0, x != 0.0 && (x < 0.0) != (y < 0.0));
  }
  var f = floor(q);
  let r = fma(-f, y, x);  // x - f * y, exact where fma is fused
  if (r != 0.0 && (r < 0.0) != (y < 0.0)) {
    f -= 1.0;
  } else if (r != 0.0 && abs(r) >= abs(y)) {
    f += 1.0;
  }
  return select(f, bitcast<f32>(bitcast<u32>(q) & 0x80000000u), f == 0.0);  // ±0 as x / y
}

// div(rounding_mode="trunc") on floats: trunc(x / y) (trunc keeps -0.0).
fn div_trunc_f32(x: f32, y: f32) -> f32 {
  return trunc(x / y);
}

// Integer division on the magnitudes as u32 (on the H200 signed i32 division and remainder
// gave floor(-9 / 3) = -4): |MIN| is 2^31, and the signed result wraps as int32 does.
// Division by zero gives 0 (torch raises; a kernel cannot).
fn magnitude(v: i32) -> u32 {
  return select(bitcast<u32>(v), 0u - bitcast<u32>(v), v < 0i);
}

// x / y rounded toward zero (round_down: toward -inf where the signs differ).
fn div_i32(x: i32, y: i32, round_down: bool) -> i32 {
  if (y == 0i) {
    return 0i;
  }
  let ax = magnitude(x);
  let ay = magnitude(y);
  let q = ax / ay;
  if ((x < 0i) == (y < 0i)) {
    return bitcast<i32>(q);
  }
  let inexact = select(0u, 1u, round_down && ax - q * ay != 0u);
  return bitcast<i32>(0u - q - inexact);
}

fn div_trunc_i32(x: i32, y: i32) -> i32 {
  return div_i32(x, y, false);
}

fn div_floor_i32(x: i32, y: i32) -> i32 {
  return div_i32(x, y, true);
}
