// Elementwise binary ops with NumPy broadcasting: out = combine(a, b), `combine` (the
// switch on `op`) generated from the table in ops/binary.py. One invocation per output
// element on a grid that may be folded into two dimensions. Operands are read through
// strides over out's coordinates (0 on broadcast dims), so the same index math also
// serves `gather`: out = a read through any strides (a permute).

override wg_size: u32 = 256;
override op: u32 = 0u;  // a row of ops/binary.py's table

// Offsets of output element i in a and in b.
fn operand_offsets(i: u32) -> vec2<u32> {
  var rest = i;
  var offsets = vec2<u32>(0u, 0u);
  for (var d = params.rank; d > 0u; d -= 1u) {
    let size = at(params.out_shape, d - 1u);
    let coord = rest % size;
    rest = rest / size;
    offsets += coord * vec2<u32>(at(params.a_strides, d - 1u), at(params.b_strides, d - 1u));
  }
  return offsets;
}

// Entry points (generated): main runs item(i), gather gather_item(i), for each element.
fn item(i: u32) {
  if (params.same_shape == 1u) {
    out[i] = elem(combine(f32(a[i]), f32(b[i])));
    return;
  }
  let o = operand_offsets(i);
  out[i] = elem(combine(f32(a[o.x]), f32(b[o.y])));
}

// out[i] = a[offset of i through a_strides]; binds a, out and params only.
fn gather_item(i: u32) {
  out[i] = a[operand_offsets(i).x];
}
