// Block-wise dequantization of an int8/uint8 [R, C] tensor (ops/dequantize_weight.py):
// torchao.dequantize_affine and quantized_decomposed.dequantize_per_channel.
// out[r, c] = (f32(q[r, c]) - zp[b]) * scale[b], b = (r / block_r) * (C / block_c) +
// c / block_c, as both torch functions compute it in f32. q is raw bytes four to a u32
// word; the zero points are bytes (zp_kind 2 int8, 3 uint8), i32 words (1) or f32 bits
// (4); zp_kind 0: none (then `zp` is bound to the scales and unread).

override wg_size: u32 = 256;

fn byte_at(words: u32, index: u32, signed: bool) -> i32 {
  let shift = 24u - 8u * (index % 4u);
  if (signed) {
    return bitcast<i32>(words << shift) >> 24u;
  }
  return i32((words << shift) >> 24u);
}

fn zero_point(b: u32) -> f32 {
  switch params.zp_kind {
    case 1u: { return f32(bitcast<i32>(zp[b])); }
    case 2u: { return f32(byte_at(zp[b / 4u], b, true)); }
    case 3u: { return f32(byte_at(zp[b / 4u], b, false)); }
    case 4u: { return bitcast<f32>(zp[b]); }
    default: { return 0.0; }
  }
}

// Entry point main (generated): one output element per item.
fn item(i: u32) {
  let r = i / params.cols;
  let c = i - r * params.cols;
  let b = (r / params.block_r) * (params.cols / params.block_c) + c / params.block_c;
  let q = f32(byte_at(q_words[i / 4u], i, params.signed != 0u));
  out[i] = elem((q - zero_point(b)) * scales[b]);
}
