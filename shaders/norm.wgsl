// LayerNorm over rows (aten.native_layer_norm) and GroupNorm (aten.native_group_norm,
// a row being one group of one sample, contiguous in NCHW): for each row of `width`
// elements
//   mean = sum(x) / width, var = sum((x - mean)^2) / width (biased),
//   rstd = inverseSqrt(var + eps), y = (x - mean) * rstd * weight + bias,
// writing y, and mean and rstd (one value per row). The weight and bias index of element
// j of a row: j for layer norm; its channel ((row % groups) * width + j) / inner for
// group norm (inner: the spatial size; layer norm passes groups = inner = 1).
//
// One workgroup per row (wg_size lanes, a power of two) with a halving tree in
// workgroup memory; rows beyond one grid dimension fold into y (ctx.grid).
//
// Numerics: two passes over shifted data. Every lane subtracts the row's first
// element k before summing (x - k is exact for x near k), so a row like 1e4 + noise
// sums small numbers; the mean is k + m with m = sum(x - k) / width, and the second
// pass sums ((x - k) - m)^2, never E[x^2] - E[x]^2. A constant row gives var 0.
//
// The "row" form (entry rows): one whole row per invocation, no workgroup memory and no
// barrier (ops/norm.py picks it on CPU adapters for many rows), the same two passes.
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
  let total = tree(lane, wg_size, q, false);
  // The rare row whose float32 sum of squared deviations overflowed, or underflowed
  // (flushed subnormals) with an eps too small to dominate: lane 0 redoes it scaled by
  // its largest |deviation|, as careful BLAS norms do, and the row's lanes leave: out of
  // line, so the common path below is the kernel without a rescue (as rms_norm's -tail
  // form). No barrier follows, so the non-uniform return is safe.
  if (norm_row_is_rare(total, n, params.eps)) {  // snippets.wgsl bits
    if (lane == 0u) {
      let r = rescue_row(row, base, k + m, total);
      mean_out[row] = elem(k + m);
      rstd_out[row] = elem(r);
    }
    return;
  }
  let rstd = inverseSqrt(total / n + params.eps);
  for (var j = lane; j < width; j += wg_size) {
    y[base + j] = elem(affine(row, j, ((f32(x[base + j]) - k) - m) * rstd));
  }
  if (lane == 0u) {
    mean_out[row] = elem(k + m);
    rstd_out[row] = elem(rstd);
  }
}

// Entry point rows (generated): whole_row(row) for each row.
fn whole_row(row: u32) {
  let width = params.width;
  let n = f32(width);
  let base = row * width;
  let k = f32(x[base]);
  var s = 0.0;
  for (var j = 0u; j < width; j++) {
    s += f32(x[base + j]) - k;
  }
  let m = s / n;
  var total = 0.0;
  for (var j = 0u; j < width; j++) {
    let d = (f32(x[base + j]) - k) - m;
    total += d * d;
  }
  if (norm_row_is_rare(total, n, params.eps)) {
    mean_out[row] = elem(k + m);
    rstd_out[row] = elem(rescue_row(row, base, k + m, total));
    return;
  }
  let rstd = inverseSqrt(total / n + params.eps);
  for (var j = 0u; j < width; j++) {
    y[base + j] = elem(affine(row, j, ((f32(x[base + j]) - k) - m) * rstd));
  }
  mean_out[row] = elem(k + m);
  rstd_out[row] = elem(rstd);
}

fn affine(row: u32, j: u32, normalized: f32) -> f32 {
  var v = normalized;
  let c = ((row % params.groups) * params.width + j) / params.inner;
  if (has_weight) {
    v *= f32(weight[c]);
  }
  if (has_bias) {
    v += f32(bias[c]);
  }
  return v;
}

// Writes a rare row from the exact variance: with 2^k bringing the largest |x - mean|
// into [1, 2), y = (x - mean) 2^k * inverseSqrt(mean(((x - mean) 2^k)^2) + eps 2^2k);
// returns rstd (inf where it exceeds float32). Powers of two scale exactly on the bits
// (eps / s^2 in floats is 0 / 0 where a compiler forms s * s and the adapter flushes it).
// Rows with inf, constant rows and rows where eps dominates after all keep the plain
// formula.
fn rescue_row(row: u32, base: u32, mean: f32, total: f32) -> f32 {
  let width = params.width;
  let n = f32(width);
  var smax = 0u;  // no NaN here (the total would be NaN)
  for (var j = 0u; j < width; j++) {
    smax = max(smax, bitcast<u32>(f32(x[base + j]) - mean) & 0x7fffffffu);
  }
  var k = 0;
  if (smax != 0u && smax < 0x7f800000u) {
    k = pow2_to_unit(smax);
  }
  var ss = 0.0;
  for (var j = 0u; j < width; j++) {
    let d = scale_pow2(f32(x[base + j]) - mean, k);
    ss += d * d;
  }
  let t = scale_pow2(scale_pow2(params.eps, k), k);
  var r = inverseSqrt(ss / n + t);
  if (smax == 0u || smax >= 0x7f800000u || not_finite(t)) {
    k = 0;
    r = inverseSqrt(total / n + params.eps);
  }
  for (var j = 0u; j < width; j++) {
    y[base + j] = elem(affine(row, j, scale_pow2(f32(x[base + j]) - mean, k) * r));
  }
  return scale_pow2(r, k);
}
