// LayerNorm over rows (aten.native_layer_norm): for each row of `width` elements
//   mean = sum(x) / width, var = sum((x - mean)^2) / width (biased),
//   rstd = inverseSqrt(var + eps), y = (x - mean) * rstd * weight + bias,
// writing y, and mean and rstd (one value per row).
//
// One workgroup per row (wg_size lanes, a power of two) with a halving tree in
// workgroup memory; rows beyond one grid dimension fold into y (ctx.grid).
//
// Numerics: two passes over shifted data. Every lane subtracts the row's first
// element k before summing (x - k is exact for x near k), so a row like 1e4 + noise
// sums small numbers; the mean is k + m with m = sum(x - k) / width, and the second
// pass sums ((x - k) - m)^2, never E[x^2] - E[x]^2. A constant row gives var 0.
//
// Prelude (Params, bindings): shaders/compose.py from ops/norm.py.

override wg_size: u32 = 64;  // a power of two
override has_weight: bool = true;
override has_bias: bool = true;

// Entry point main (generated): one workgroup per row.
fn normalize_row(row: u32, lane: u32) {
  let width = params.width;
  let n = f32(width);
  let base = row * width;
  let k = f32(x[base]);  // the shift

  var s = 0.0;
  for (var j = lane; j < width; j += wg_size) {
    s += f32(x[base + j]) - k;
  }
  let m = tree(lane, wg_size, s, false) / n;  // mean - k

  var q = 0.0;
  for (var j = lane; j < width; j += wg_size) {
    let d = (f32(x[base + j]) - k) - m;
    q += d * d;
  }
  let rstd = inverseSqrt(tree(lane, wg_size, q, false) / n + params.eps);

  for (var j = lane; j < width; j += wg_size) {
    var v = ((f32(x[base + j]) - k) - m) * rstd;
    if (has_weight) {
      v *= f32(weight[j]);
    }
    if (has_bias) {
      v += f32(bias[j]);
    }
    y[base + j] = elem(v);
  }
  if (lane == 0u) {
    mean_out[row] = elem(k + m);
    rstd_out[row] = elem(rstd);
  }
}
