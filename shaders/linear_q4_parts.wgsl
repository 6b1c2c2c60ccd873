// The lane sums of shaders/linear_q4.wgsl's gemv form, one composed per kernel
// (ops/linear_q4.py): a halving tree in workgroup memory, or subgroupAdd where the
// adapter has subgroups (a module that names subgroupAdd does not compile without them).
// ==== sum_tree  gemv without subgroups: the lanes' sums meet in a halving tree
var<workgroup> part: array<vec4<f32>, wg_size>;

fn gemv_item(g: u32, lane: u32) {
  part[lane] = gemv_partial(g, lane);
  workgroupBarrier();
  for (var stride = wg_size / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      part[lane] += part[lane + stride];
    }
    workgroupBarrier();
  }
  if (lane == 0u) {
    gemv_write(g, part[0]);
  }
}
// ==== sum_subgroups  gemv with subgroups: subgroupAdd, no barrier when one subgroup spans the workgroup
var<workgroup> part: array<vec4<f32>, wg_size>;

fn gemv_item_sg(g: u32, lane: u32, sg_size: u32, sg_lane: u32) {
  let t = subgroupAdd(gemv_partial(g, lane));
  if (sg_size >= wg_size) {
    if (lane == 0u) {
      gemv_write(g, t);
    }
    return;
  }
  // several subgroups: each one's first lane posts its total, the others zeros
  part[lane] = select(vec4<f32>(0.0), t, sg_lane == 0u);
  workgroupBarrier();
  for (var stride = wg_size / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      part[lane] += part[lane + stride];
    }
    workgroupBarrier();
  }
  if (lane == 0u) {
    gemv_write(g, part[0]);
  }
}
