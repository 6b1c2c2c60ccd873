// Pieces of the implicit-GEMM convolution (shaders/conv_gemm.wgsl) that ops/conv.py
// composes with compose.fill. A section runs from its `// ==== name` line to the next.
// ==== stage_w  one K step of weights: stage_w_scalar (any K) or stage_w_vec4 (K % 4 == 0)
fn stage_w(wb: u32, m0: u32, k0: u32, li: u32) { stage_w_$form(wb, m0, k0, li); }
