// Elementwise ops whose operands and result differ in type (bool masks, comparisons,
// where, integer arithmetic), with NumPy broadcasting. `item` is generated per op and per
// operand types (ops/mixed.py): it loads a, b, c at the offsets below, as f32 for float
// tensors, i32 for int32/int64 and u32 (0 or 1) for bool, and stores out[i].
override wg_size: u32 = 256;

// Offsets of output element i in a, b and c (their strides are 0 on broadcast dims).
fn operand_offsets(i: u32) -> vec3<u32> {
  var rest = i;
  var offsets = vec3<u32>(0u, 0u, 0u);
  for (var d = params.rank; d > 0u; d -= 1u) {
    let size = at(params.out_shape, d - 1u);
    let coord = rest % size;
    rest = rest / size;
    offsets += coord * vec3<u32>(at(params.a_strides, d - 1u), at(params.b_strides, d - 1u),
                                 at(params.c_strides, d - 1u));
  }
  return offsets;
}
