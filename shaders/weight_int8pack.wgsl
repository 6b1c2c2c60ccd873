// aten._weight_int8pack_mm (ops/linear_q8.py): out[m, n] = (sum_k x[m, k] * w[n, k]) *
// scales[n], x float [M, K], w int8 [N, K] as raw bytes four to a u32 word (any K: each
// weight is read from its byte), the sum in f32 as torch's CPU kernel does.

override wg_size: u32 = 64;

fn weight(n: u32, k: u32) -> f32 {
  let b = n * params.k + k;
  return f32(bitcast<i32>(w[b / 4u] << (24u - 8u * (b % 4u))) >> 24u);
}

// Entry point main (generated): one output element per item.
fn item(i: u32) {
  let m = i / params.n;
  let n = i % params.n;
  var acc = 0.0;
  for (var k = 0u; k < params.k; k++) {
    acc += f32(x[m * params.k + k]) * weight(n, k);
  }
  out[i] = elem(acc * f32(scales[n]));
}
