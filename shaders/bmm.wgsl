// Batched matrix product out[b, m, n] = sum_k a[b, m, k] * w[b, k, n], one invocation per
// output element, accumulated in f32 (also in the f16 form); addmm's epilogue (B = 1):
// beta * bias[m * bias_row + n * bias_col] + alpha * the sum (beta 0: the bias unread).
override wg_size: u32 = 256;

fn bmm_item(i: u32) {
  let n = i % params.n;
  let bm = i / params.n;  // b * M + m
  let b = bm / params.m;
  var a_at = bm * params.k;
  var w_at = b * params.k * params.n + n;
  var acc = 0.0;
  for (var k = 0u; k < params.k; k += 1u) {
    acc += f32(a[a_at]) * f32(w[w_at]);
    a_at += 1u;
    w_at += params.n;
  }
  var v = params.alpha * acc;
  if (params.has_bias != 0u) {
    v = params.beta * f32(bias[(bm % params.m) * params.bias_row + n * params.bias_col]) + v;
  }
  out[i] = elem(v);
}
