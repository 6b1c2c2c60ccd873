// 2-D pooling (aten.max_pool2d_with_indices, aten.avg_pool2d): one output element per
// invocation over the two trailing dims of a contiguous (planes, H, W) tensor.
//
// The window starts at o * stride - padding and is clamped to the input, as torch's CPU
// kernels do, so padding is never read. Max keeps the first maximum (v > best) and lets
// any NaN take over (the last NaN wins), on the bits (less_bits, is_nan) so no compiler
// folds the NaN test; its index is h * W + w within the plane. Avg sums in f32 in
// window order and divides by divisor_override, the window clamped to the padded input
// (count_include_pad) or the elements it covers. Adaptive avg: the window of output o
// is [floor(o * in / out), ceil((o + 1) * in / out)), its sum divided by its height,
// then its width, as torch's CPU kernel.
//
// Prelude (Params, bindings): shaders/compose.py from ops/pool.py.

override wg_size: u32 = 256;
override op: u32 = 0u;  // 0 max, 1 avg, 2 adaptive avg
override has_indices: bool = true;

const AVG = 1u;
const ADAPTIVE = 2u;

// Entry point main (generated): pool_item(i) for each output element.
fn pool_item(i: u32) {
  let ow = i % params.out_w;
  let rest = i / params.out_w;
  let oh = rest % params.out_h;
  let plane = rest / params.out_h;
  let base = plane * params.in_h * params.in_w;
  let h_start = i32(oh * params.sh) - i32(params.ph);
  let w_start = i32(ow * params.sw) - i32(params.pw);
  if (op == AVG) {
    y[i] = elem(average(base, h_start, w_start));
    return;
  }
  if (op == ADAPTIVE) {
    y[i] = elem(adaptive(base, oh, ow));
    return;
  }
  let h_end = min(h_start + i32((params.kh - 1u) * params.dh + 1u), i32(params.in_h));
  let w_end = min(w_start + i32((params.kw - 1u) * params.dw + 1u), i32(params.in_w));
  var h0 = h_start;
  while (h0 < 0) { h0 += i32(params.dh); }
  var w0 = w_start;
  while (w0 < 0) { w0 += i32(params.dw); }
  // torch starts from -inf at the first element; taking the first element as it comes
  // is the same (and no -inf constant, which WGSL's constant evaluation refuses). The
  // window is never empty: padding is at most half the kernel.
  var best = 0.0;
  var at = u32(h0) * params.in_w + u32(w0);
  var found = false;
  for (var ih = h0; ih < h_end; ih += i32(params.dh)) {
    for (var iw = w0; iw < w_end; iw += i32(params.dw)) {
      let j = u32(ih) * params.in_w + u32(iw);
      let v = f32(x[base + j]);
      if (!found || less_bits(best, v) || is_nan(v)) {
        found = true;
        best = v;
        at = j;
      }
    }
  }
  y[i] = elem(best);
  if (has_indices) {
    indices[i] = i32(at);
  }
}

fn average(base: u32, h_start: i32, w_start: i32) -> f32 {
  let h_pad_end = min(h_start + i32(params.kh), i32(params.in_h + params.ph));
  let w_pad_end = min(w_start + i32(params.kw), i32(params.in_w + params.pw));
  let padded = (h_pad_end - h_start) * (w_pad_end - w_start);
  let h0 = max(h_start, 0);
  let w0 = max(w_start, 0);
  let h1 = min(h_pad_end, i32(params.in_h));
  let w1 = min(w_pad_end, i32(params.in_w));
  if (h0 >= h1 || w0 >= w1) {
    return 0.0;
  }
  var sum = 0.0;
  for (var ih = h0; ih < h1; ih++) {
    for (var iw = w0; iw < w1; iw++) {
      sum += f32(x[base + u32(ih) * params.in_w + u32(iw)]);
    }
  }
  var count = (h1 - h0) * (w1 - w0);
  if (params.divisor != 0u) {
    count = i32(params.divisor);
  } else if (params.count_pad != 0u) {
    count = padded;
  }
  return sum / f32(count);
}

fn adaptive(base: u32, oh: u32, ow: u32) -> f32 {
  let h0 = oh * params.in_h / params.out_h;
  let h1 = ((oh + 1u) * params.in_h + params.out_h - 1u) / params.out_h;
  let w0 = ow * params.in_w / params.out_w;
  let w1 = ((ow + 1u) * params.in_w + params.out_w - 1u) / params.out_w;
  var sum = 0.0;
  for (var ih = h0; ih < h1; ih++) {
    for (var iw = w0; iw < w1; iw++) {
      sum += f32(x[base + ih * params.in_w + iw]);
    }
  }
  return sum / f32(h1 - h0) / f32(w1 - w0);
}
