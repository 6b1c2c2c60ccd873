// Pieces of the implicit-GEMM convolution (shaders/conv_gemm.wgsl) that ops/conv.py
// composes with compose.fill. A section runs from its `// ==== name` line to the next.
// ==== stage_w  one K step of weights: stage_w_scalar (any K) or stage_w_vec4 (K % 4 == 0)
fn stage_w(wb: u32, m0: u32, k0: u32, k_end: u32, li: u32) { stage_w_$form(wb, m0, k0, k_end, li); }
// ==== finish  every conv form's store: out[at] = clamp(v + bias[co] (+ resid[at])); the
// residual (runtime/fusion_conv.py: conv then add.Tensor) is added to the conv's value
// rounded to the tensors' dtype, as the unfused add would
fn finish(at: u32, co: u32, acc: f32) {
  var v = acc;
  if (params.has_bias == 1u) {
    v += f32(bias[co]);
  }
  if (params.has_resid == 1u) {
    v = f32(resid[at]) + f32(elem(v));
  }
  out[at] = elem(clamp_f32(v, params.lo, params.hi));  // on the bits: max/min drop NaN
}
// ==== put_out  the whole K: finish
fn put(at: u32, s: u32, co: u32, v: f32) {
  finish(at, co, v);
}
// ==== put_part  split K: split s's raw partial sum (conv.wgsl split_item finishes it)
fn put(at: u32, s: u32, co: u32, v: f32) {
  kparts[s + at] = v;
}
