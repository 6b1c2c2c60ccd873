// quantized_decomposed.embedding_byte (ops/embedding_byte.py): out[r, c] =
// (w[id, c] - zp[id, g]) * scale[id, g] with id = indices[r] and g = c / group, as
// torch's dequantize_per_channel_group computes it (f32(w - zp) * scale). The int8/uint8
// weights are raw bytes, four to a u32 word; `zp` is bound to the scales and unused when
// the op has no zero points. An id outside [0, vocab) writes zeros and sets the flag, as
// embedding.wgsl does (runtime/id_checks.py).

override wg_size: u32 = 256;

fn weight_at(b: u32) -> f32 {
  let shift = 24u - 8u * (b % 4u);
  if (params.signed != 0u) {
    return f32(bitcast<i32>(w[b / 4u] << shift) >> 24u);
  }
  return f32((w[b / 4u] << shift) >> 24u);
}

// Entry point main (generated): one output element per item.
fn item(i: u32) {
  let row = i / params.dim;
  let col = i - row * params.dim;
  let index = indices[row];
  var value = 0.0;
  if (index >= 0 && u32(index) < params.vocab) {
    let id = u32(index);
    let g = id * params.groups + col / params.group;
    var q = weight_at(id * params.dim + col);
    if (params.has_zp != 0u) {
      q -= zp[g];
    }
    value = q * scales[g];
  } else if (col == 0u) {
    flag_bad_id(row, index);
  }
  out[i] = value;
}
