// et_vk.embedding_q4gsw (ops/embedding_q4.py): out[r, c] = f32(w[ids[r], c]) * scale[ids[r],
// c / group], one invocation per output element. The 4-bit elements are read as bytes of
// the u32 words (a row of D / 2 bytes need not start at a word); element 2j sits in the low
// nibble when low_first (the llama export's is_linear_weight), else in the high one, stored
// + 8. An id outside [0, vocab) writes zeros and sets the flag as embedding.wgsl does.

override wg_size: u32 = 256;

// Entry point main (generated): item(i) for each output element.
fn item(i: u32) {
  let row = i / params.dim;
  let col = i - row * params.dim;
  let index = indices[row];
  var value = 0.0;
  if (index >= 0 && u32(index) < params.vocab) {
    let v = u32(index);
    let b = v * params.row_bytes + col / 2u;
    let byte = (weights[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
    let high = ((col & 1u) == 1u) == (params.low_first != 0u);
    let q = i32(select(byte & 0xfu, byte >> 4u, high)) - 8;
    value = f32(q) * f32(scales[v * params.scale_stride + col / params.gsize]);
  } else if (col == 0u) {
    flag_bad_id(row, index);
  }
  out[i] = elem(value);
}
