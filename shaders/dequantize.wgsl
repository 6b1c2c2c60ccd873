// quantized_decomposed.dequantize_per_tensor (ops/quantize_tensor.py): torch computes
// (q.to(float32) - zp) * scale, the scale a float32; one output element per item, read
// from the byte of its u32 word (sign-extended for int8). qscale[0] / qzp[0] as in
// quantize.wgsl, the scale never inverted.

override wg_size: u32 = 256;

// Entry point dequantize (generated).
fn dequantize_item(i: u32) {
  var q = i32((x[i / 4u] >> (8u * (i % 4u))) & 0xffu);
  if (params.signed != 0u && q >= 128) {
    q -= 256;
  }
  out[i] = elem(f32(q - qzp[0]) * qscale[0]);
}
