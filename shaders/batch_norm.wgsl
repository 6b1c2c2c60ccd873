// Eval-mode batch norm (aten._native_batch_norm_legit_no_training): per channel c (dim 1
// of a contiguous (N, C, inner) tensor) invstd = 1 / sqrt(var + eps), alpha = invstd *
// weight, beta = bias - mean * alpha, y = x * alpha + beta: torch's CPU formula, in f32.
// main: one element per invocation; main4: four (inner a multiple of 4, so one channel).
//
// Prelude (Params, bindings): shaders/compose.py from ops/batch_norm.py.

override wg_size: u32 = 256;
override has_weight: bool = true;
override has_bias: bool = true;

// (alpha, beta) of channel c.
fn terms(c: u32) -> vec2<f32> {
  let invstd = 1.0 / sqrt(f32(run_var[c]) + params.eps);
  var alpha = invstd;
  if (has_weight) {
    alpha *= f32(weight[c]);
  }
  var beta = -f32(run_mean[c]) * alpha;
  if (has_bias) {
    beta += f32(bias[c]);
  }
  return vec2<f32>(alpha, beta);
}

// Entry point main (generated): bn_item(i) for each element.
fn bn_item(i: u32) {
  let t = terms((i / params.inner) % params.channels);
  y[i] = elem(f32(x[i]) * t.x + t.y);
}

// Entry point main4 (generated): bn_item4(q) for each group of four elements.
fn bn_item4(q: u32) {
  let t = terms((q * 4u / params.inner) % params.channels);
  y4[q] = vec4<elem>(vec4<f32>(x4[q]) * t.x + t.y);
}
