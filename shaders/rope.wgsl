// Rotary position embeddings of x [B, S, H, D] into out, one invocation per element.
// Entry `interleaved` (et_vk.apply_rotary_emb): pairs (2p, 2p+1) rotate by the angle of
// row s, column p of cos/sin [S, D/2]. Entry `hf` (et_vk.apply_rotary_emb_hf): the first
// `rot` dims rotate half against half (rotate_half) with cos/sin row start + s of the full
// tables [T, rot]; dims past `rot` pass through. start is read at execute from `ints`.
override wg_size: u32 = 64;

@compute @workgroup_size(wg_size)
fn interleaved(@builtin(global_invocation_id) gid: vec3<u32>,
               @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat_index(gid, groups);
  if (i >= params.numel) {
    return;
  }
  let d = i % params.head_dim;
  let s = (i / (params.head_dim * params.heads)) % params.seq;
  let t = s * (params.head_dim / 2u) + d / 2u;
  let c = f32(cos_t[t]);
  let sn = f32(sin_t[t]);
  if (d % 2u == 0u) {
    out[i] = elem(f32(x[i]) * c - f32(x[i + 1u]) * sn);
  } else {
    out[i] = elem(f32(x[i - 1u]) * sn + f32(x[i]) * c);
  }
}

@compute @workgroup_size(wg_size)
fn hf(@builtin(global_invocation_id) gid: vec3<u32>,
      @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat_index(gid, groups);
  if (i >= params.numel) {
    return;
  }
  let d = i % params.head_dim;
  if (d >= params.rot) {
    out[i] = x[i];
    return;
  }
  let s = (i / (params.head_dim * params.heads)) % params.seq;
  let row = u32(max(ints[params.start_slot], 0)) + s;
  if (row >= params.table_rows) {
    out[i] = elem(0.0);
    return;
  }
  let half_rot = params.rot / 2u;
  var rotated = 0.0;
  if (d < half_rot) {
    rotated = -f32(x[i + half_rot]);
  } else {
    rotated = f32(x[i - half_rot]);
  }
  let t = row * params.rot + d;
  out[i] = elem(f32(x[i]) * f32(cos_t[t]) + rotated * f32(sin_t[t]));
}
