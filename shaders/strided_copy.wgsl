// dst[dst_offset + coord . dst_strides] = src[src_offset + coord . src_strides] for every
// coordinate of `shape` (up to 8 dims): cat writes each input into its slice of out,
// expand_copy reads through stride 0, copy_ broadcasts src into self. `word` is the stored
// element: f32/f16 for floats, u32 for int32/int64/bool (moved as bits, never a float).
override wg_size: u32 = 256;

fn copy_item(i: u32) {
  var rest = i;
  var s = params.src_offset;
  var d = params.dst_offset;
  for (var k = params.rank; k > 0u; k -= 1u) {
    let size = at(params.shape, k - 1u);
    let c = rest % size;
    rest = rest / size;
    s += c * at(params.src_strides, k - 1u);
    d += c * at(params.dst_strides, k - 1u);
  }
  dst[d] = src[s];
}
