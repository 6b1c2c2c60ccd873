// Pieces of the implicit-GEMM convolution (shaders/conv_gemm.wgsl) that ops/conv.py
// composes with compose.fill. A section runs from its `// ==== name` line to the next.
// ==== stage_w  one K step of weights: stage_w_scalar (any K) or stage_w_vec4 (K % 4 == 0)
fn stage_w(wb: u32, m0: u32, k0: u32, k_end: u32, li: u32) { stage_w_$form(wb, m0, k0, k_end, li); }
// ==== put_out  the whole K: out[at] = clamp(v + bias[co])
fn put(at: u32, s: u32, co: u32, v: f32) {
  var b = 0.0;
  if (params.has_bias == 1u) {
    b = f32(bias[co]);
  }
  out[at] = elem(clamped(v + b));
}
// ==== put_part  split K: split s's raw partial sum (conv.wgsl split_item finishes it)
fn put(at: u32, s: u32, co: u32, v: f32) {
  part[s + at] = v;
}
