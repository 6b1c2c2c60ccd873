// dst[dst_offset + coord . dst_strides] = src[src_offset + coord . src_strides] for every
// coordinate of `shape` (up to 8 dims): cat writes each input into its slice of out,
// expand_copy reads through stride 0, copy_ broadcasts src into self. `word` is the stored
// element: f32/f16 for floats, u32 for int32/int64/bool (moved as bits, never a float).
override wg_size: u32 = 256;

fn copy_item(i: u32) {
  dst[params.dst_offset + strided_offset(i, params.dst_strides)] =
      src[params.src_offset + strided_offset(i, params.src_strides)];
}
