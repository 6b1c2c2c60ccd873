// 8-bit activations x 8-bit weights (ops/linear_q8.py): et_vk.linear_q8ta_q8csw (float
// out), et_vk.q8ta_linear and q8ta_linear_gemv (int8 out). x int8 [M, K] and w int8
// [N, K] are raw bytes, four to a u32 word (K a multiple of 4, so a row is K/4 words).
// The dot product is exact in i32: acc = sum (x - in_zp) * w = sum x*w - in_zp * sum w,
// both sums from the same words (the file's weight_sums are not trusted). Then, as torch
// dequantizes: acc * (in_scale * w_scale[n]) + bias[n], relu, and for int8 out the
// quantize round(v * out_inv) + out_zp clamped to [-128, 127] (round: half to even).
// `out` is u32: float results are stored as their bits. The dot itself (dot4I8Packed or
// unpacked in i32) comes from shaders/linear_q8_dot.wgsl.

override wg_size: u32 = 64;

// sum over k of x[m, k] * w[n, k], and of w[n, k]
fn row_dot(m: u32, n: u32) -> vec2<i32> {
  var acc = vec2<i32>(0, 0);
  let xs = m * params.k4;
  let ws = n * params.k4;
  for (var j = 0u; j < params.k4; j++) {
    acc += dot_words(x[xs + j], w[ws + j]);
  }
  return acc;
}

fn product(m: u32, n: u32) -> f32 {
  let s = row_dot(m, n);
  var v = f32(s.x - params.in_zp * s.y) * (params.in_scale * wscale[n]);
  if (params.has_bias != 0u) {
    v += bias[n];
  }
  if (params.relu != 0u) {
    v = max(v, 0.0);
  }
  return v;
}

// Entry point main_f32 (generated): one float output element per item.
fn item_f32(i: u32) {
  out[i] = bitcast<u32>(product(i / params.n, i % params.n));
}

// Entry point main_q8 (generated): one output word (4 int8 elements) per item.
fn item_q8(word: u32) {
  var packed = 0u;
  for (var j = 0u; j < 4u; j++) {
    let i = 4u * word + j;
    if (i < params.numel) {
      let v = product(i / params.n, i % params.n);
      let q = clamp(round(v * params.out_inv) + f32(params.out_zp), -128.0, 127.0);
      packed |= (u32(i32(q)) & 0xffu) << (8u * j);
    }
  }
  out[word] = packed;
}
