// argmax / argmin along lines: one line per invocation, scanning its R elements in order,
// so the first index of a tie wins (-0 and +0 tie) and the first NaN wins for both, as
// torch (NaN counts as the largest and the smallest). Line offsets as in reduce.wgsl.
override wg_size: u32 = 64;
override take_min: bool = false;

fn arg_line(line: u32) {
  let base = offset_of(line, params.kept_rank, params.kept_shape, params.kept_strides);
  var best = f32(x[base]);
  var at_best = 0u;
  for (var j = 1u; j < params.r && !is_nan(best); j++) {
    let v = f32(x[base + offset_of(j, params.red_rank, params.red_shape, params.red_strides)]);
    if (is_nan(v) || select(v > best, v < best, take_min)) {
      best = v;
      at_best = j;
    }
  }
  y[line] = i32(at_best);
}
