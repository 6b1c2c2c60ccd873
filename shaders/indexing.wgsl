// Element gathers, one invocation per output element (bound shapes; padded layout).
// Entry `take`: out[o, r, c] = src[o, idx[r], c] (aten.index.Tensor along one dim; a
// negative index counts from the end, one outside the dim gives 0 and sets the flag,
// from which execute raises as torch does: runtime/id_checks.py).
// Entry `strided`: out[o, j, c] = src[o, start + j * step, c] (slice_copy, select_copy);
// start is read at execute from `ints`, so SymInt bounds and index -1 of a dynamic dim
// need no new recording. `word` is the stored element: f32/f16 (the float kernel), or
// u32 for 4-byte integers and bools (moved as bits, never through a float).
override wg_size: u32 = 64;

fn read_at(o: u32, row: i32, c: u32) -> word {
  if (row < 0 || u32(row) >= params.in_len) {
    return word(0);
  }
  return src[(o * params.in_len + u32(row)) * params.inner + c];
}

fn take_item(i: u32) {
  let c = i % params.inner;
  let t = i / params.inner;
  let r = t % params.out_len;
  let given = idx[r];
  var row = given;
  if (row < 0) {
    row += i32(params.in_len);
  }
  if ((row < 0 || u32(row) >= params.in_len) && c == 0u && t < params.out_len) {
    flag_bad_id(r, given);  // counted once per index (first outer slice, column 0)
  }
  out[i] = read_at(t / params.out_len, row, c);
}

fn strided_item(i: u32) {
  let c = i % params.inner;
  let t = i / params.inner;
  let j = t % params.out_len;
  out[i] = read_at(t / params.out_len, ints[params.start_slot] + i32(j * params.step), c);
}
