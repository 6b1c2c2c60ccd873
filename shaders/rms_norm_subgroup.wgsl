// RMSNorm, subgroup variants (adapters with the "subgroups" feature): one row per
// workgroup of wg_size invocations; subgroupAdd sums each subgroup's squares, and only
// when the workgroup spans several subgroups do their totals meet in workgroup memory
// (one barrier). With wg_size <= the subgroup size there is no barrier at all, which
// is what CPU adapters (SwiftShader: subgroups of 4) want.
// Same bindings, params, semantics and rescue modes as rms_norm.wgsl (ops/rms_norm.py
// declares both); RESCUE_SPLIT's second dispatch is rms_norm.wgsl `rescue`.
override wg_size: u32 = 4;

var<workgroup> partial: array<f32, wg_size>;

fn row_total(sum: f32, li: u32, sg_size: u32, sg_lane: u32) -> f32 {
  let total = subgroupAdd(sum);
  if (sg_size >= wg_size) {
    return total;  // the whole workgroup is one subgroup
  }
  // Which invocations share a subgroup is the implementation's choice: the first lane
  // of each subgroup posts its total, the others zeros, and every lane adds them all.
  partial[li] = select(0.0, total, sg_lane == 0u);
  workgroupBarrier();
  var all = 0.0;
  for (var k = 0u; k < wg_size; k++) {
    all += partial[k];
  }
  return all;
}

// The rare row after its sum (snippets.wgsl rms_rescue; rescue_mode is a pipeline
// constant), as rms_norm.wgsl main takes it: RARE_NONE, a row stored as usual (under
// RESCUE_SPLIT lane 0 has flagged a rare one for the second dispatch); RARE_INLINE, lane 0
// redoes it and the lanes skip their stores; RARE_TAIL, lane 0 redoes it and every lane
// leaves. The caller redoes it: scalar and vec4 rows bind x differently.
const RARE_NONE: u32 = 0u;
const RARE_INLINE: u32 = 1u;
const RARE_TAIL: u32 = 2u;

fn rare_row(row: u32, total: f32, li: u32) -> u32 {
  if (!rms_needs_rescue(total)) {
    return RARE_NONE;
  }
  if (rescue_mode == RESCUE_SPLIT) {
    if (li == 0u) {
      rescue_flags[row] = 1u;
    }
    return RARE_NONE;
  }
  return select(RARE_INLINE, RARE_TAIL, rescue_mode == RESCUE_TAIL);
}

// Entry points (generated): one workgroup per row; main loads scalars, main_vec4 vec4s.
fn row_scalar(row: u32, li: u32, sg_size: u32, sg_lane: u32) {
  let width = params.width;
  let base = row * width;
  var sum = 0.0;
  for (var j = li; j < width; j += wg_size) {
    let v = x[base + j];
    sum += v * v;
  }
  let total = row_total(sum, li, sg_size, sg_lane);
  let rare = rare_row(row, total, li);
  if (rare != RARE_NONE && li == 0u) {
    rms_rescue_row(base, total);
  }
  if (rare == RARE_TAIL) {
    return;
  }
  let rstd = inverseSqrt(total / f32(width) + params.eps);
  for (var j = select(li, width, rare == RARE_INLINE); j < width; j += wg_size) {
    y[base + j] = x[base + j] * rstd * weight[j];
  }
}

fn row_vec4(row: u32, li: u32, sg_size: u32, sg_lane: u32) {
  let width4 = params.width / 4u;
  let base = row * width4;
  var sum = 0.0;
  for (var j = li; j < width4; j += wg_size) {
    let v = x4[base + j];
    sum += dot(v, v);
  }
  let total = row_total(sum, li, sg_size, sg_lane);
  let rare = rare_row(row, total, li);
  if (li == 0u && rare == RARE_TAIL) {
    rms_rescue_row4_lean(base, total);  // one float at a time: no vec4 temporaries kept
    return;
  }
  if (li == 0u && rare == RARE_INLINE) {
    rms_rescue_row4(base, total);
  }
  if (rare == RARE_TAIL) {
    return;
  }
  let rstd = inverseSqrt(total / f32(params.width) + params.eps);
  for (var j = select(li, width4, rare == RARE_INLINE); j < width4; j += wg_size) {
    y4[base + j] = x4[base + j] * rstd * weight4[j];
  }
}
