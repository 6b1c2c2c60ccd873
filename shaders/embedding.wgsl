// aten.embedding: out[r, c] = weight[indices[r], c] for each of the `rows` indices
// (any index shape, flattened) and each of the `dim` columns; one invocation per
// output element on a grid that may be folded into two dimensions. An index outside
// [0, vocab) writes a row of zeros and sets the flag (runtime/id_checks.py): its
// column-0 invocation counts it, and the first to claim the flag records its position
// and value; execute then raises, as torch does. The indices stay i32 in the f16 form
// (int64 tensors are held as int32). Prelude: shaders/compose.py, ops/embedding.py.

override wg_size: u32 = 256;

// Entry point main (generated): item(i) for each output element.
fn item(i: u32) {
  let row = i / params.dim;
  let col = i - row * params.dim;
  let index = indices[row];
  var value = 0.0;
  if (index >= 0 && u32(index) < params.vocab) {
    value = f32(weight[u32(index) * params.dim + col]);
  } else if (col == 0u) {
    flag_bad_id(row, index);
  }
  out[i] = elem(value);
}
