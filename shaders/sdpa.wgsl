// et_vk.sdpa: softmax(q k^T * scale + mask) v, no cache and no causal mask. One invocation
// per output element (batch b, query row s, column e) over q [.., S, D], k [.., L, D],
// v [.., L, Dv] (one batch layout for the three); the mask [.., S, L] is read through
// broadcast strides (box_offset over the batch dims). Two passes over the L scores: their
// max (NaN propagates, max_nan), then the weights and the weighted v, as sdpa_kv_cache's
// `attend` does; a row of -inf scores gives NaN, as torch's softmax.
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

fn sdpa_item(i: u32) {
  let e = i % params.dv;
  let s = (i / params.dv) % params.s;
  let b = i / (params.dv * params.s);
  let q_at = (b * params.s + s) * params.d;
  let k_base = b * params.l * params.d;
  let mask_row = offset_of(b, params.batch_rank, params.batch_shape, params.mask_batch)
      + s * params.mask_s;
  var best = score(q_at, k_base, mask_row);
  for (var j = 1u; j < params.l; j++) {
    best = max_nan(best, score(q_at, k_base + j * params.d, mask_row + j * params.mask_l));
  }
  var total = 0.0;
  var acc = 0.0;
  for (var j = 0u; j < params.l; j++) {
    let w = exp(score(q_at, k_base + j * params.d, mask_row + j * params.mask_l) - best);
    total += w;
    acc += w * f32(v[(b * params.l + j) * params.dv + e]);
  }
  out[i] = elem(acc / total);
}
