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
  // The rare row is redone by lane 0 or flagged (snippets.wgsl rms_rescue; rescue_mode is
  // a pipeline constant): as in rms_norm.wgsl main.
  let rescue = rms_needs_rescue(total);
  if (rescue_mode == RESCUE_TAIL && rescue) {
    if (li == 0u) {
      rms_rescue_row(base, total);
    }
    return;
  }
  if (rescue_mode == RESCUE_SPLIT && rescue && li == 0u) {
    rescue_flags[row] = 1u;
  }
  let in_place = rescue_mode == RESCUE_INLINE && rescue;
  if (in_place && li == 0u) {
    rms_rescue_row(base, total);
  }
  let rstd = inverseSqrt(total / f32(width) + params.eps);
  for (var j = select(li, width, in_place); j < width; j += wg_size) {
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
  let rescue = rms_needs_rescue(total);
  if (rescue_mode == RESCUE_TAIL && rescue) {
    if (li == 0u) {
      rms_rescue_row4_lean(base, total);
    }
    return;
  }
  if (rescue_mode == RESCUE_SPLIT && rescue && li == 0u) {
    rescue_flags[row] = 1u;
  }
  let in_place = rescue_mode == RESCUE_INLINE && rescue;
  if (in_place && li == 0u) {
    rms_rescue_row4(base, total);
  }
  let rstd = inverseSqrt(total / f32(params.width) + params.eps);
  for (var j = select(li, width4, in_place); j < width4; j += wg_size) {
    y4[base + j] = x4[base + j] * rstd * weight4[j];
  }
}
