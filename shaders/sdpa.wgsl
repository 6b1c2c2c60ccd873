// et_vk.sdpa: softmax(q k^T * scale + mask) v, no cache and no causal mask. One invocation
// per output element (batch b, query row s, column e) over q [.., S, D], k [.., L, D],
// v [.., L, Dv] (one batch layout for the three); the mask [.., S, L] is read through
// broadcast strides (box_offset over the batch dims). The softmax is snippets.wgsl's
// softmax_weighted, which sdpa_kv_cache's `attend` runs too.
override wg_size: u32 = 64;

fn score(q_at: u32, k_at: u32, mask_at: u32) -> f32 {
  var dot = 0.0;
  for (var e = 0u; e < params.d; e++) {
    dot += f32(q[q_at + e]) * f32(k[k_at + e]);
  }
  var x = dot * params.scale;
  if (params.has_mask != 0u) {
    x += f32(mask[mask_at]);
  }
  return x;
}

// What softmax_weighted (snippets.wgsl) scores and weighs: key row j of batch b.
struct Row {
  q_at: u32,
  k_base: u32,
  mask_row: u32,
  v_at: u32,  // v's element (b, 0, e)
}

fn row_score(r: Row, j: u32) -> f32 {
  return score(r.q_at, r.k_base + j * params.d, r.mask_row + j * params.mask_l);
}

fn row_value(r: Row, j: u32) -> f32 {
  return f32(v[r.v_at + j * params.dv]);
}

fn sdpa_item(i: u32) {
  let e = i % params.dv;
  let s = (i / params.dv) % params.s;
  let b = i / (params.dv * params.s);
  let mask_row = offset_of(b, params.batch_rank, params.batch_shape, params.mask_batch)
      + s * params.mask_s;
  let row = Row((b * params.s + s) * params.d, b * params.l * params.d, mask_row,
                b * params.l * params.dv + e);
  out[i] = elem(softmax_weighted(row, params.l));
}
