// aten.gather along `dim`: out[c] = src[c with c[dim] replaced by idx[c]] for every
// coordinate c of out (= idx's shape; src may be larger in the other dims). An index
// outside [0, in_len) gives 0 and sets the flag, from which execute raises as torch does
// (runtime/id_checks.py). `word` is the stored element (f32/f16, or u32 moved as bits).
override wg_size: u32 = 64;

fn gather_item(i: u32) {
  let given = idx[i];
  let bad = given < 0 || u32(given) >= params.in_len;
  if (bad) {
    flag_bad_id(i, given);
    out[i] = word(0);
    return;
  }
  var rest = i;
  var offset = 0u;
  for (var d = params.rank; d > 0u; d -= 1u) {
    let size = at(params.shape, d - 1u);
    let coord = select(rest % size, u32(given), d - 1u == params.dim);
    offset += coord * at(params.src_strides, d - 1u);
    rest = rest / size;
  }
  out[i] = src[offset];
}
