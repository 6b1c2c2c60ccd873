// Batched matrix product out[b, m, n] = sum_k a[b, m, k] * w[b, k, n], one invocation per
// output element, accumulated in f32 (also in the f16 form).
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
  out[i] = elem(acc);
}
