// aten.grid_sampler_2d: one output element (n, c, i, j) per invocation of a contiguous
// (N, C, Ho, Wo) output, sampling input (N, C, H, W) at grid[n, i, j] = (x, y) in [-1, 1].
// Coordinates as torch's CPU kernel in f32 (ops/grid_sample.py): unnormalize, then
// border clips, reflection folds and clips. Bilinear: the four neighbours of floor(x),
// weighted by distances, a neighbour outside reading 0; nearest: round half to even.
// A coordinate still NaN or infinite after padding gives 0.
//
// Prelude (Params, bindings): shaders/compose.py from ops/grid_sample.py.

override wg_size: u32 = 256;
override mode: u32 = 0u;     // 0 bilinear, 1 nearest
override padding: u32 = 0u;  // 0 zeros, 1 border, 2 reflection
override align: bool = false;

const NEAREST = 1u;
const ZEROS = 0u;
const REFLECTION = 2u;

fn source(v: f32, size: u32) -> f32 {
  let n = f32(size);
  var x = (v + 1.0) * (n / 2.0) - 0.5;
  if (align) {
    x = (v + 1.0) * ((n - 1.0) / 2.0);
  }
  if (padding == ZEROS) {
    return x;
  }
  if (padding == REFLECTION) {
    var low = -0.5;
    var span2 = 2.0 * n;
    if (align) {
      low = 0.0;
      span2 = 2.0 * (n - 1.0);
    }
    if (align && size <= 1u) {
      x = 0.0;
    } else {
      let a = abs(x - low);
      let extra = a - trunc(a / span2) * span2;
      x = min(extra, span2 - extra) + low;
    }
  }
  if (is_nan(x)) {
    return x;
  }
  return clamp(x, 0.0, n - 1.0);
}

// The input at (h, w) of plane `base`, 0 outside.
fn tap(base: u32, h: i32, w: i32) -> f32 {
  if (h < 0 || w < 0 || h >= i32(params.in_h) || w >= i32(params.in_w)) {
    return 0.0;
  }
  return f32(x[base + u32(h) * params.in_w + u32(w)]);
}

// Entry point main (generated): sample_item(i) for each output element.
fn sample_item(i: u32) {
  let j = i % params.out_w;
  var rest = i / params.out_w;
  let row = rest % params.out_h;
  rest = rest / params.out_h;   // n * C + c
  let n = rest / params.channels;
  let g = ((n * params.out_h + row) * params.out_w + j) * 2u;
  let sx = source(f32(grid[g]), params.in_w);
  let sy = source(f32(grid[g + 1u]), params.in_h);
  if (not_finite(sx) || not_finite(sy)) {
    y[i] = elem(0.0);
    return;
  }
  let base = rest * params.in_h * params.in_w;
  if (mode == NEAREST) {
    y[i] = elem(tap(base, i32(round(sy)), i32(round(sx))));
    return;
  }
  let x0 = floor(sx);
  let y0 = floor(sy);
  let we = sx - x0;
  let ns = sy - y0;
  let ea = 1.0 - we;
  let so = 1.0 - ns;
  let w0 = i32(x0);
  let h0 = i32(y0);
  y[i] = elem(tap(base, h0, w0) * (so * ea) + tap(base, h0, w0 + 1) * (so * we)
              + tap(base, h0 + 1, w0) * (ns * ea) + tap(base, h0 + 1, w0 + 1) * (ns * we));
}
