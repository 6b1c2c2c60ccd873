// out[i] = 1 when any element of input line i (over the reduced dims) is nonzero (NaN
// counts), else 0. Kept and reduced coordinates both walk the input's full rank: `kept`
// has size 1 on reduced dims, `reduced` size 1 on kept ones.
override wg_size: u32 = 256;

fn offset_of(j: u32, shape: array<vec4<u32>, 2>) -> u32 {
  var rest = j;
  var offset = 0u;
  for (var d = params.rank; d > 0u; d -= 1u) {
    let size = at(shape, d - 1u);
    offset += (rest % size) * at(params.strides, d - 1u);
    rest = rest / size;
  }
  return offset;
}

fn any_item(i: u32) {
  let base = offset_of(i, params.kept);
  var hit = 0u;
  for (var j = 0u; j < params.count; j += 1u) {
    if (nonzero(a[base + offset_of(j, params.reduced)])) {
      hit = 1u;
      break;
    }
  }
  out[i] = hit;
}
