// sdpa_with_kv_cache: write k/v into the caches at rows [start, start + S), then causal
// attention of each query row s over cache rows [0, start + s]; query head h reads KV
// head h / (H / Hkv) (GQA). Layouts: q/out [S, H, D], k/v [S, Hkv, D], caches [T, Hkv, D]
// (batch 1). start and S are read at execute from `ints` (runtime/dynamic.py), so one
// recording serves every position and every prefill length up to the bound. Prelude
// (Params, bindings): shaders/compose.py, ops/attention.py.
// Entry `update`: one invocation per element of k (and v). Entry `attend`: one per output
// element (s, h, d); it recomputes the row's scores (two passes: max, then exp-sum with
// the weighted sum of v), which needs no workgroup memory or barriers.
override wg_size: u32 = 64;

@compute @workgroup_size(wg_size)
fn update(@builtin(global_invocation_id) gid: vec3<u32>,
          @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat_index(gid, groups);
  let row_len = params.kv_heads * params.head_dim;
  let s = i / row_len;
  let start = ints[params.start_slot];
  let len = ints[params.len_slot];
  if (s >= params.s_bound || i32(s) >= len || start < 0) {
    return;
  }
  let row = u32(start) + s;
  if (row >= params.cache_rows) {
    return;
  }
  let at = row * row_len + (i - s * row_len);
  k_cache[at] = k[i];
  v_cache[at] = v[i];
}

@compute @workgroup_size(wg_size)
fn attend(@builtin(global_invocation_id) gid: vec3<u32>,
          @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat_index(gid, groups);
  let D = params.head_dim;
  let H = params.heads;
  let s = i / (H * D);
  let len = ints[params.len_slot];
  if (s >= params.s_bound || i32(s) >= len) {
    return;
  }
  let h = (i / D) % H;
  let d = i % D;
  let kvh = h / (H / params.kv_heads);
  let row_len = params.kv_heads * D;
  let q_at = (s * H + h) * D;
  let ctx = min(u32(max(ints[params.start_slot], 0)) + s + 1u, params.cache_rows);
  var best = -3.0e38;
  for (var j = 0u; j < ctx; j++) {
    var dot = 0.0;
    let k_at = j * row_len + kvh * D;
    for (var e = 0u; e < D; e++) {
      dot += f32(q[q_at + e]) * f32(k_cache[k_at + e]);
    }
    best = max(best, dot * params.scale);
  }
  var total = 0.0;
  var acc = 0.0;
  for (var j = 0u; j < ctx; j++) {
    var dot = 0.0;
    let k_at = j * row_len + kvh * D;
    for (var e = 0u; e < D; e++) {
      dot += f32(q[q_at + e]) * f32(k_cache[k_at + e]);
    }
    let w = exp(dot * params.scale - best);
    total += w;
    acc += w * f32(v_cache[k_at + d]);
  }
  out[i] = elem(acc / total);
}

// Entry `attend_rows`: one workgroup per query row and head (s, h); wg_size >= head_dim.
// Its lanes score CHUNK cache rows at a time (a row each, so every score is computed
// once), meet at the chunk's max (snippet `tree`), turn the scores into weights in
// workgroup memory, and lane d adds weight * v[row, d]. The running max and sum carry
// from chunk to chunk (online softmax), so any context length fits. NaN and inf scores
// reach the output as torch's softmax gives them (max_nan, exp(inf - inf) = NaN).
const CHUNK: u32 = 256u;
var<workgroup> weights: array<f32, CHUNK>;
var<workgroup> visible_rows: u32;

@compute @workgroup_size(wg_size)
fn attend_rows(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) lane: u32) {
  let H = params.heads;
  let D = params.head_dim;
  let g = group_index(wid, groups);
  let s = g / H;
  let h = g % H;
  if (lane == 0u) {  // from storage: made uniform for the barriers below
    var rows = 0u;
    if (s < params.s_bound && i32(s) < ints[params.len_slot]) {
      rows = min(u32(max(ints[params.start_slot], 0)) + s + 1u, params.cache_rows);
    }
    visible_rows = rows;
  }
  let rows = workgroupUniformLoad(&visible_rows);
  if (rows == 0u) {
    return;
  }
  let row_len = params.kv_heads * D;
  let head_at = (h / (H / params.kv_heads)) * D;
  let q_at = (s * H + h) * D;
  var run_max = -3.0e38;
  var run_sum = 0.0;
  var acc = 0.0;
  for (var c0 = 0u; c0 < rows; c0 += CHUNK) {
    let m = min(CHUNK, rows - c0);
    var top = -3.0e38;
    for (var r = lane; r < m; r += wg_size) {
      let k_at = (c0 + r) * row_len + head_at;
      var dot = 0.0;
      for (var e = 0u; e < D; e++) {
        dot += f32(q[q_at + e]) * f32(k_cache[k_at + e]);
      }
      weights[r] = dot * params.scale;
      top = max_nan(top, dot * params.scale);
    }
    let new_max = max_nan(run_max, tree(lane, wg_size, top, true));  // barriers inside
    for (var r = lane; r < m; r += wg_size) {
      weights[r] = exp(weights[r] - new_max);
    }
    workgroupBarrier();
    if (lane < D) {
      let fix = exp(run_max - new_max);
      var sum = 0.0;
      var part = 0.0;
      for (var r = 0u; r < m; r++) {
        let w = weights[r];
        sum += w;
        part += w * f32(v_cache[(c0 + r) * row_len + head_at + lane]);
      }
      acc = acc * fix + part;
      run_sum = run_sum * fix + sum;
    }
    run_max = new_max;
    workgroupBarrier();  // the weights of the next chunk overwrite these
  }
  if (lane < D) {
    out[q_at + lane] = elem(acc / run_sum);
  }
}
