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

// An integer that orders non-NaN floats as their values do (subnormals included, +0 and
// -0 equal): compare these where a flushing adapter would see subnormals as 0, or where a
// compiler could turn a compare-and-select into a max/min that loses -0 or NaN.
fn order_key(v: f32) -> i32 {
  let u = bitcast<u32>(v);
  let mag = i32(u & 0x7fffffffu);
  return select(mag, -mag, u >= 0x80000000u);
}

// v < w on the bits; false when either is NaN.
fn less_bits(v: f32, w: f32) -> bool {
  return !is_nan(v) && !is_nan(w) && order_key(v) < order_key(w);
}

// v * 2^k on the bits (inf beyond float32, truncated toward 0 below FLT_MIN): exact for
// subnormal v too, and no float arithmetic a flushing adapter or a reassociating compiler
// could turn into 0, inf or NaN. NaN, inf and +-0 come back as they are.
fn scale_pow2(v: f32, k: i32) -> f32 {
  let b = bitcast<u32>(v);
  let sign = b & 0x80000000u;
  let mag = b & 0x7fffffffu;
  if (mag == 0u || mag >= 0x7f800000u) { return v; }
  var m = mag & 0x7fffffu;   // v = m * 2^(e - 150) ...
  var e = i32(mag >> 23u);
  if (e == 0) { e = 1; } else { m |= 0x800000u; }
  let shift = i32(countLeadingZeros(m)) - 8;
  m <<= u32(shift);          // ... with m now in [2^23, 2^24)
  let ne = e - shift + k;
  if (ne >= 255) { return bitcast<f32>(sign | 0x7f800000u); }
  if (ne >= 1) { return bitcast<f32>(sign | (u32(ne) << 23u) | (m & 0x7fffffu)); }
  if (ne <= -23) { return bitcast<f32>(sign); }
  return bitcast<f32>(sign | (m >> u32(1 - ne)));
}

// The k that brings the nonzero finite magnitude with bits `mag` into [1, 2) by
// scale_pow2 (subnormals included).
fn pow2_to_unit(mag: u32) -> i32 {
  let e = i32(mag >> 23u);
  if (e == 0) { return 127 + (i32(countLeadingZeros(mag)) - 8); }
  return 127 - e;
}

fn scale4(v: vec4<f32>, k: i32) -> vec4<f32> {
  return vec4<f32>(scale_pow2(v.x, k), scale_pow2(v.y, k), scale_pow2(v.z, k), scale_pow2(v.w, k));
}

// A norm's rare row (rms_rescue below; the matmul family's norm prologue): the k that
// brings its largest |x|, with bits `smax`, into [1, 2) ...
fn rms_rescue_k(smax: u32) -> i32 {
  if (smax == 0u || smax >= 0x7f800000u) { return 0; }
  return pow2_to_unit(smax);
}

// ... and (k, rstd) from the sum `ss` of its (x * 2^k)^2 and the plain total: x * 2^k *
// rstd is the normalised x. Powers of two scale exactly, on the bits (eps / s^2 in
// floats is 0 / 0 where a compiler forms s * s and the adapter flushes it).
fn rare_row_scale(smax: u32, k: i32, ss: f32, total: f32, width: f32, eps: f32) -> vec2<f32> {
  let t = scale_pow2(scale_pow2(eps, k), k);
  if (smax == 0u || smax >= 0x7f800000u || not_finite(t)) {
    return vec2<f32>(0.0, inverseSqrt(total / width + eps));
  }
  return vec2<f32>(f32(k), inverseSqrt(ss / width + t));
}

// 0, or a subnormal: what a flushing adapter's float tests cannot tell apart.
fn below_flt_min(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) < 0x00800000u;
}

// A norm's rare row, from the f32 sum `total` of its n squares and its eps: the sum
// overflowed, or the mean total / n is below FLT_MIN (a flushing adapter makes it 0,
// even where the sum itself is normal) and eps (below 2^-100 or negative) cannot dwarf
// it. The mean is tested as total < n FLT_MIN, a product that is never subnormal.
fn norm_row_is_rare(total: f32, n: f32, eps: f32) -> bool {
  let overflow = bitcast<u32>(total) == 0x7f800000u;
  let eps_bits = bitcast<u32>(eps);
  let tiny_eps = eps_bits >= 0x80000000u || eps_bits < 0x0d800000u;
  let small_mean = below_flt_min(total) || total < n * bitcast<f32>(0x00800000u);
  return overflow || (small_mean && tiny_eps);
}

// ==== nan_minmax
// torch.maximum / minimum: NaN if either is NaN (GPUs' max/min may drop it), else the
// larger (smaller); on a tie (+0 and -0) the first operand, as torch.
fn max_nan(p: f32, q: f32) -> f32 {
  if (is_nan(p)) { return p; }
  if (is_nan(q)) { return q; }
  return select(q, p, order_key(p) >= order_key(q));  // bits: no fmax to fold into
}

fn min_nan(p: f32, q: f32) -> f32 {
  if (is_nan(p)) { return p; }
  if (is_nan(q)) { return q; }
  return select(q, p, order_key(p) <= order_key(q));
}

// clamp and hardtanh as torch: a value below lo is lo, then one above hi is hi (so
// lo > hi gives hi); NaN stays NaN; -0 is kept (it is not below 0).
fn clamp_f32(v: f32, lo: f32, hi: f32) -> f32 {
  // Compared on the bits: a compiler folds float compare-and-select into max/min, which
  // turn -0 into +0 (and may drop NaN), and a flushing adapter sees subnormals as 0.
  if (is_nan(v)) { return v; }
  let r = select(v, lo, less_bits(v, lo));
  return select(r, hi, less_bits(hi, r));
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

// ==== strided_offset
// The offset of element i (C order over params.shape's params.rank dims) under strides;
// needs shape_index.
fn strided_offset(i: u32, strides: array<vec4<u32>, 2>) -> u32 {
  var rest = i;
  var offset = 0u;
  for (var d = params.rank; d > 0u; d -= 1u) {
    let size = at(params.shape, d - 1u);
    offset += (rest % size) * at(strides, d - 1u);
    rest = rest / size;
  }
  return offset;
}

// ==== box_offset
// Offset of the i-th point of a row-major box of `rank` dims with the given strides.
fn offset_of(i: u32, rank: u32, shape: array<vec4<u32>, 2>,
             strides: array<vec4<u32>, 2>) -> u32 {
  var rest = i;
  var off = 0u;
  for (var d = rank; d > 0u; d -= 1u) {
    let size = at(shape, d - 1u);
    off += (rest % size) * at(strides, d - 1u);
    rest = rest / size;
  }
  return off;
}

// ==== softmax_weighted
// sum over j < n of softmax(score)_j * value_j for one output element, in two passes
// (the scores' max, NaN propagating, then the weights), recomputing each score; a row of
// -inf scores gives NaN, as torch's softmax. The including shader defines `struct Row`
// (what locates the element) and `row_score(r, j)`, `row_value(r, j)`; needs nan_minmax.
fn softmax_weighted(r: Row, n: u32) -> f32 {
  var best = row_score(r, 0u);
  for (var j = 1u; j < n; j++) {
    best = max_nan(best, row_score(r, j));
  }
  var total = 0.0;
  var acc = 0.0;
  for (var j = 0u; j < n; j++) {
    let w = exp(row_score(r, j) - best);
    total += w;
    acc += w * row_value(r, j);
  }
  return acc / total;
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
// redoes the row scaled by the power of two 2^k that brings its largest |x| into [1, 2),
// as careful BLAS norms do, so the result follows the exact mean square:
// y = (x 2^k) * inverseSqrt(mean((x 2^k)^2) + eps 2^2k) * w. The common path pays one test. Rows holding NaN have a NaN total and never come
// here; rows holding inf, zero rows and rows where eps dominates after all take the
// plain formula.
//
// Where the rare row is redone (override rescue_mode, ops/rms_norm.py Variant.rescue):
//   RESCUE_INLINE  by the row's first lane, while the others wait to skip their stores
//                  (the first design: the rescue sits inside the common path)
//   RESCUE_TAIL    the same, out of line: the row's lanes leave before the common stores,
//                  which are then exactly the kernel without a rescue
//   RESCUE_SPLIT   not here: the row's first lane sets rescue_flags[row] (the row's
//                  plain result is written and later overwritten) and a second dispatch,
//                  rms_norm.wgsl `rescue`, redoes the flagged rows and clears the flags
override rescue_mode: u32 = 0u;
const RESCUE_INLINE: u32 = 0u;
const RESCUE_TAIL: u32 = 1u;
const RESCUE_SPLIT: u32 = 2u;

fn rms_needs_rescue(total: f32) -> bool {
  return norm_row_is_rare(total, f32(params.width), params.eps);
}

fn rms_rescue_scale(smax: u32, k: i32, ss: f32, total: f32) -> vec2<f32> {
  return rare_row_scale(smax, k, ss, total, f32(params.width), params.eps);
}

fn rms_rescue_row(base: u32, total: f32) {
  let width = params.width;
  var smax = 0u;  // no NaN here (the total would be NaN)
  for (var j = 0u; j < width; j++) {
    smax = max(smax, bitcast<u32>(f32(x[base + j])) & 0x7fffffffu);
  }
  let k = rms_rescue_k(smax);
  var ss = 0.0;
  for (var j = 0u; j < width; j++) {
    let v = scale_pow2(f32(x[base + j]), k);
    ss += v * v;
  }
  let r = rms_rescue_scale(smax, k, ss, total);
  let kk = i32(r.x);
  for (var j = 0u; j < width; j++) {
    y[base + j] = elem(scale_pow2(f32(x[base + j]), kk) * r.y * f32(weight[j]));
  }
}

fn rms_rescue_row4(base: u32, total: f32) {
  let width4 = params.width / 4u;
  let r = rare_row4_scale(base, width4, total, f32(params.width), params.eps);
  let kk = i32(r.x);
  for (var j = 0u; j < width4; j++) {
    y4[base + j] = vec4<elem>(scale4(vec4<f32>(x4[base + j]), kk) * r.y * vec4<f32>(weight4[j]));
  }
}

// rms_rescue_row4 one float at a time (a component of x4, y4, weight4 per step): the
// -tail form's rescue sits in the hot kernel, and the registers its code needs can set
// the kernel's register count (and so its occupancy); one float live, not four vec4s.
fn rms_rescue_row4_lean(base4: u32, total: f32) {
  let width = params.width;
  var smax = 0u;
  for (var j = 0u; j < width; j++) {
    smax = max(smax, bitcast<u32>(f32(x4[base4 + j / 4u][j % 4u])) & 0x7fffffffu);
  }
  let k = rms_rescue_k(smax);
  var ss = 0.0;
  for (var j = 0u; j < width; j++) {
    let v = scale_pow2(f32(x4[base4 + j / 4u][j % 4u]), k);
    ss += v * v;
  }
  let r = rms_rescue_scale(smax, k, ss, total);
  let kk = i32(r.x);
  for (var j = 0u; j < width; j++) {
    let v = scale_pow2(f32(x4[base4 + j / 4u][j % 4u]), kk) * r.y;
    y4[base4 + j / 4u][j % 4u] = elem(v * f32(weight4[j / 4u][j % 4u]));
  }
}
// ==== rare_row4  a template (compose.fill, $rows: the vec4 binding the rows are in): (k, rstd) of a rare row
// The row of n4 vec4s at `base` scaled by the 2^k that brings its largest |x| into
// [1, 2), and its rstd from the scaled squares (rms_rescue above; the matmul family's
// RMSNorm, matmul_parts.wgsl gemv_norm). Needs "bits".
fn rare_row4_scale(base: u32, n4: u32, total: f32, width: f32, eps: f32) -> vec2<f32> {
  var m = vec4<u32>(0u);
  for (var j = 0u; j < n4; j++) {
    m = max(m, bitcast<vec4<u32>>(vec4<f32>($rows[base + j])) & vec4<u32>(0x7fffffffu));
  }
  let smax = max(max(m.x, m.y), max(m.z, m.w));
  let k = rms_rescue_k(smax);
  var ss = 0.0;
  for (var j = 0u; j < n4; j++) {
    let v = scale4(vec4<f32>($rows[base + j]), k);
    ss += dot(v, v);
  }
  return rare_row_scale(smax, k, ss, total, width, eps);
}
// ==== attention_merge
// The split attention's merge (shaders/sdpa_kv_cache.wgsl `combine`, with its steps and
// roundings) as a linear's input prologue (ops/attention_merge.py). `parts` holds per
// (head, part) its max, sum and head-dim weighted sums (attend_split); merge_heads,
// merge_dim and merge_parts are consts of the kernel. set_merge (every lane, barriers)
// puts each (head, part)'s factor exp(max - the head's max) and each head's sum, then the
// merged row [heads x dim], in workgroup memory (each element merged once a workgroup, and
// a small kernel: merging inside the forms' unrolled loads made lavapipe's compile take
// minutes); merged4(j): the row's elements 4j .. 4j + 3.
var<workgroup> merge_fix: array<f32, merge_heads * merge_parts>;
var<workgroup> merge_sum: array<f32, merge_heads>;
var<workgroup> merge_row: array<f32, merge_heads * merge_dim>;

fn merge_at(h: u32, p: u32) -> u32 {  // where (head h, part p) starts in parts
  return (h * merge_parts + p) * (merge_dim + 2u);
}

fn set_merge(lane: u32) {
  for (var i = lane; i < merge_heads * merge_parts; i += wg_size) {
    let h = i / merge_parts;
    var top = -3.0e38;
    for (var p = 0u; p < merge_parts; p++) {
      top = max_nan(top, parts[merge_at(h, p)]);
    }
    merge_fix[i] = exp(parts[merge_at(h, i % merge_parts)] - top);
  }
  workgroupBarrier();
  for (var h = lane; h < merge_heads; h += wg_size) {
    var sum = 0.0;
    for (var p = 0u; p < merge_parts; p++) {
      sum += merge_fix[h * merge_parts + p] * parts[merge_at(h, p) + 1u];
    }
    merge_sum[h] = sum;
  }
  workgroupBarrier();
  for (var e = lane; e < merge_heads * merge_dim; e += wg_size) {
    merge_row[e] = merged(e);
  }
  workgroupBarrier();
}

fn merged(e: u32) -> f32 {  // element e of the merged row [heads x dim]
  let h = e / merge_dim;
  var acc = 0.0;
  for (var p = 0u; p < merge_parts; p++) {
    acc += merge_fix[h * merge_parts + p] * parts[merge_at(h, p) + 2u + e % merge_dim];
  }
  return f32(elem(acc / merge_sum[h]));
}

fn merged4(j: u32) -> vec4<f32> {
  let e = 4u * j;
  return vec4<f32>(merge_row[e], merge_row[e + 1u], merge_row[e + 2u], merge_row[e + 3u]);
}
// ==== split_k_sum
// Split K (ops/split_k.py): element i's partial sums over the spans, added in span order;
// `kparts` holds them [spans, stride].
fn split_k_sum(i: u32, spans: u32, stride: u32) -> f32 {
  var s = 0.0;
  for (var p = 0u; p < spans; p++) {
    s += kparts[p * stride + i];
  }
  return s;
}
// ==== bad_id
// An id outside its table (runtime/id_checks.py): counted in flag[0]; the first call to
// claim flag[1] records its position and value, from which execute raises as torch does.
fn flag_bad_id(at: u32, given: i32) {
  atomicAdd(&flag[0], 1u);
  if (atomicExchange(&flag[1], 1u) == 0u) {
    atomicStore(&flag[2], at);
    atomicStore(&flag[3], bitcast<u32>(given));
  }
}
