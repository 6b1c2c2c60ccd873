// Rotary position embeddings of q and k [B, S, H, D] (H may differ: GQA) into their
// outputs in one dispatch: invocation i rotates element i of q and element i of k (those
// that exist). Entry `interleaved` (et_vk.apply_rotary_emb): pairs (2p, 2p+1) rotate by
// the angle of row s, column p of cos/sin [S, D/2]; `interleaved_rows` by row start + s
// of the full tables [T, D/2] (their slice folded away: runtime/fusion_rope.py, 0 past
// them as `hf`). Entry `hf`
// (et_vk.apply_rotary_emb_hf): the first `rot` dims rotate half against half
// (rotate_half) with cos/sin row start + s of the full tables [T, rot]; dims past `rot`
// pass through. start is read at execute from `ints`. Entry `complex`
// (et_vk.apply_rotary_emb_interleaved, one tensor x [..., N, C] into out_q): pairs (2p,
// 2p+1) times the complex number (cos, sin) at (n, 2p), (n, 2p+1) of freqs [N, C], read
// through cos_t.
override wg_size: u32 = 64;

// Element i of q (which = 0) or k (1), and its store.
fn xv(which: u32, i: u32) -> f32 {
  if (which == 0u) {
    return f32(xq[i]);
  }
  return f32(xk[i]);
}

fn store(which: u32, i: u32, v: f32) {
  if (which == 0u) {
    out_q[i] = elem(v);
  } else {
    out_k[i] = elem(v);
  }
}

// row0: the tables' row of query row 0 (0, or start for `interleaved_rows`).
fn interleaved_at(which: u32, i: u32, heads: u32, row0: u32) {
  let d = i % params.head_dim;
  let row = row0 + (i / (params.head_dim * heads)) % params.seq;
  if (row >= params.table_rows) {
    store(which, i, 0.0);
    return;
  }
  let t = row * (params.head_dim / 2u) + d / 2u;
  let c = f32(cos_t[t]);
  let sn = f32(sin_t[t]);
  if (d % 2u == 0u) {
    store(which, i, xv(which, i) * c - xv(which, i + 1u) * sn);
  } else {
    store(which, i, xv(which, i - 1u) * sn + xv(which, i) * c);
  }
}

fn hf_at(which: u32, i: u32, heads: u32) {
  let d = i % params.head_dim;
  if (d >= params.rot) {
    store(which, i, xv(which, i));  // exact: an f16 value round-trips through f32
    return;
  }
  let s = (i / (params.head_dim * heads)) % params.seq;
  let row = u32(max(ints[params.start_slot], 0)) + s;
  if (row >= params.table_rows) {
    store(which, i, 0.0);
    return;
  }
  let half_rot = params.rot / 2u;
  var rotated = 0.0;
  if (d < half_rot) {
    rotated = -xv(which, i + half_rot);
  } else {
    rotated = xv(which, i - half_rot);
  }
  let t = row * params.rot + d;
  store(which, i, xv(which, i) * f32(cos_t[t]) + rotated * f32(sin_t[t]));
}

// Element i of q and element i of k, those that exist.
fn interleaved_item(i: u32) {
  if (i < params.numel_q) { interleaved_at(0u, i, params.heads_q, 0u); }
  if (i < params.numel_k) { interleaved_at(1u, i, params.heads_k, 0u); }
}

fn interleaved_rows_item(i: u32) {
  let start = u32(max(ints[params.start_slot], 0));
  if (i < params.numel_q) { interleaved_at(0u, i, params.heads_q, start); }
  if (i < params.numel_k) { interleaved_at(1u, i, params.heads_k, start); }
}

fn hf_item(i: u32) {
  if (i < params.numel_q) { hf_at(0u, i, params.heads_q); }
  if (i < params.numel_k) { hf_at(1u, i, params.heads_k); }
}

fn complex_item(i: u32) {
  if (i >= params.numel_q) {
    return;
  }
  let d = i % params.head_dim;
  let pair = ((i / params.head_dim) % params.seq) * params.head_dim + d - d % 2u;
  let c = f32(cos_t[pair]);
  let sn = f32(cos_t[pair + 1u]);
  if (d % 2u == 0u) {
    out_q[i] = elem(f32(xq[i]) * c - f32(xq[i + 1u]) * sn);
  } else {
    out_q[i] = elem(f32(xq[i - 1u]) * sn + f32(xq[i]) * c);
  }
}
