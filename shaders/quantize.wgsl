// quantized_decomposed.quantize_per_tensor / dequantize_per_tensor (ops/quantize_tensor.py).
// int8/uint8 tensors are raw bytes, four to a u32 word (little-endian, byte j of word w
// is element 4w + j). `qscale[0]`/`qzp[0]` hold the scale and zero point: written at load
// for the default form (the scale already inverted on the host, as torch divides in
// double), or the op's own scale and zero-point tensors for the `.tensor` form.

override wg_size: u32 = 256;

// 1 / s to f32 from an f32 s: a division refined by one fma step, so a GPU whose
// division is a few ulp off still gives (nearly always) the correctly rounded inverse.
fn inverse(s: f32) -> f32 {
  let r = 1.0 / s;
  return fma(r, fma(-s, r, 1.0), r);
}

// torch: clamp(round(x * inv_scale) + zp, qmin, qmax); round() is half to even in both.
fn quantize_one(x: f32, inv_scale: f32, zp: f32) -> u32 {
  let q = clamp(round(x * inv_scale) + zp, f32(params.qmin), f32(params.qmax));
  return u32(i32(q)) & 0xffu;
}

// Entry point quantize (generated): one output word (4 elements) per item.
fn quantize_word(w: u32) {
  var inv_scale = qscale[0];
  if (params.tensor_form != 0u) {
    inv_scale = inverse(inv_scale);
  }
  let zp = f32(qzp[0]);
  var word = 0u;
  for (var j = 0u; j < 4u; j++) {
    let i = 4u * w + j;
    if (i < params.numel) {
      word |= quantize_one(f32(x[i]), inv_scale, zp) << (8u * j);
    }
  }
  out[w] = word;
}
