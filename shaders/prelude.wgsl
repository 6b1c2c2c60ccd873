// The generated prelude of every kernel, as templates shaders/compose.py fills in
// (`$name` placeholders; each section is exactly the text it gives, so a comment about
// one sits on its `// ====` line): the `enable` lines, the element type alias, the
// uniform `struct Params` (one `field` per member, padding included), the storage and
// uniform bindings, and the generated entry points on a grid that may be folded into
// two dimensions (`per_item`: one invocation per item; `per_group`: one workgroup per
// item, `per_group_subgroups` with the subgroup builtins too). `case` is one case of a
// switch on an op table's row (generated.wgsl's apply and combine).
// ==== enable
enable $name;
// ==== alias: `elem` is f32, or f16 in the f16 form
alias elem = $elem;  // the stored element type
const elem_is_f16: bool = $is_f16;  // the form: a branch on it is folded away
// ==== word: a family's own alias (e.g. the 4-byte `word` a copy moves), see compose.alias
alias $name = $type;
// ==== struct
struct Params {
$fields}
// ==== field
  $name: $type,
// ==== storage
@group(0) @binding($index) var<storage, $access> $name: array<$type>;
// ==== uniform
@group(0) @binding($index) var<uniform> params: Params;
// ==== per_item
@compute @workgroup_size(wg_size)
fn $name(@builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat_index(gid, groups);
  if (i < $count) {
    $call(i);
  }
}
// ==== per_group
@compute @workgroup_size(wg_size)
fn $name(@builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32) {
  let g = group_index(wid, groups);
  if (g < $count) {
    $call(g, lane);
  }
}
// ==== per_group_subgroups
@compute @workgroup_size(wg_size)
fn $name(@builtin(workgroup_id) wid: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
    @builtin(subgroup_size) sg_size: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32) {
  let g = group_index(wid, groups);
  if (g < $count) {
    $call(g, lane, sg_size, sg_lane);
  }
}
// ==== case: one case of an op table's switch (compose.cases)
    case ${index}u: { return $expr; }
