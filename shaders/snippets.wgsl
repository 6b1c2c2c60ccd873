// WGSL pieces kernels share; shaders/compose.py includes the ones a Kernel names.
// Each starts at a "// ==== name" line.

// ==== bits
// NaN and inf tests on the bits: compilers may fold float comparisons with NaN.
fn not_finite(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) >= 0x7f800000u;
}

fn is_nan(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// ==== nan_minmax
// torch.maximum / minimum: NaN if either is NaN (GPUs' max/min may drop it), else the
// larger (smaller); on a tie (+0 and -0) the first operand, as torch.
fn max_nan(p: f32, q: f32) -> f32 {
  if (is_nan(p)) { return p; }
  if (is_nan(q)) { return q; }
  return select(q, p, p >= q);
}

fn min_nan(p: f32, q: f32) -> f32 {
  if (is_nan(p)) { return p; }
  if (is_nan(q)) { return q; }
  return select(q, p, p <= q);
}

// ==== flat_index
// One invocation per item on a grid that may be folded into two dimensions
// (gpu/interface.py fold_grid); needs `override wg_size`.
fn flat_index(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
  return gid.x + gid.y * groups.x * wg_size;
}

// The index of this workgroup on a folded grid.
fn group_index(wid: vec3<u32>, groups: vec3<u32>) -> u32 {
  return wid.x + wid.y * groups.x;
}

// ==== shape_index
// Element d of an array<vec4<u32>, 2> (a shape or strides of up to 8 dims).
fn at(v: array<vec4<u32>, 2>, d: u32) -> u32 {
  return v[d / 4u][d % 4u];
}

// ==== tree
var<workgroup> partial: array<f32, wg_size>;

// The sum (the NaN-propagating max when take_max) of `value` over each run of `width`
// lanes (a power of two dividing wg_size), by a halving tree in workgroup memory.
// Every invocation of the workgroup must call it (barriers); each gets its run's total.
fn tree(lane: u32, width: u32, value: f32, take_max: bool) -> f32 {
  partial[lane] = value;
  workgroupBarrier();
  let sub = lane % width;
  for (var stride = width / 2u; stride > 0u; stride /= 2u) {
    if (sub < stride) {
      let other = partial[lane + stride];
      if (take_max) {
        partial[lane] = max_nan(partial[lane], other);
      } else {
        partial[lane] += other;
      }
    }
    workgroupBarrier();
  }
  let total = partial[lane - sub];
  workgroupBarrier();  // partial is reused by the next call
  return total;
}

// ==== rms_rescue
// RMSNorm's rare rows (needs "bits"; the rms_norm bindings x, x4, y, y4, weight, weight4
// and params.width, params.eps). A row needs it when its f32 sum of squares overflowed
// (inf), or underflowed (0 or subnormal: squares flushed by adapters that flush
// denormals, or too few bits left) while eps is too small to dominate. One invocation
// redoes the row scaled by its largest |x|, as careful BLAS norms do, so the result
// follows the exact mean square: y = (x / s) * inverseSqrt(mean((x / s)^2) + eps / s^2)
// * w. The common path pays one test. Rows holding NaN have a NaN total and never come
// here; rows holding inf, zero rows and rows where eps dominates after all take the
// plain formula.
const RMS_FLT_MIN: f32 = 1.17549435e-38;
const RMS_TINY_EPS: f32 = 7.88860905e-31;  // 2^-100: a larger eps dwarfs a mean < FLT_MIN

fn rms_needs_rescue(total: f32) -> bool {
  let overflow = bitcast<u32>(total) == 0x7f800000u;
  return overflow || (total < RMS_FLT_MIN && params.eps < RMS_TINY_EPS);
}

// (divisor, rstd) of a rare row from its largest |x| `s`, the sum of its (x / s)^2 and
// the plain total.
fn rms_rescue_scale(s: f32, ss: f32, total: f32) -> vec2<f32> {
  let t = (params.eps / s) / s;
  let n = f32(params.width);
  if (s == 0.0 || not_finite(s) || not_finite(t)) {
    return vec2<f32>(1.0, inverseSqrt(total / n + params.eps));
  }
  return vec2<f32>(s, inverseSqrt(ss / n + t));
}

fn rms_rescue_row(base: u32, total: f32) {
  let width = params.width;
  var s = 0.0;
  for (var j = 0u; j < width; j++) {
    s = max(s, abs(f32(x[base + j])));  // no NaN here (the total would be NaN)
  }
  var ss = 0.0;
  for (var j = 0u; j < width; j++) {
    let v = f32(x[base + j]) / s;
    ss += v * v;
  }
  let k = rms_rescue_scale(s, ss, total);
  for (var j = 0u; j < width; j++) {
    y[base + j] = elem(f32(x[base + j]) / k.x * k.y * f32(weight[j]));
  }
}

fn rms_rescue_row4(base: u32, total: f32) {
  let width4 = params.width / 4u;
  var m = vec4<f32>(0.0);
  for (var j = 0u; j < width4; j++) {
    m = max(m, abs(vec4<f32>(x4[base + j])));
  }
  let s = max(max(m.x, m.y), max(m.z, m.w));
  var ss = 0.0;
  for (var j = 0u; j < width4; j++) {
    let v = vec4<f32>(x4[base + j]) / s;
    ss += dot(v, v);
  }
  let k = rms_rescue_scale(s, ss, total);
  for (var j = 0u; j < width4; j++) {
    y4[base + j] = vec4<elem>(vec4<f32>(x4[base + j]) / k.x * k.y * vec4<f32>(weight4[j]));
  }
}
