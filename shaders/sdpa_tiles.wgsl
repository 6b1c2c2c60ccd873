// Flash attention for prefill (sdpa's `tiles` form), composed after sdpa_kv_cache.wgsl
// (visible, key, value, keep, q_load) by ops/attention.py, one kernel per head dim: the
// consts and the unrolled per-lane steps (`weigh`, `store_rows`) are generated there.
// A section runs from its `// ==== name` line to the next.
// ==== attend_tiles  the entry; ${dim}: head dim, ${rows}: output rows per lane (TQ TD / 512, at least 1)
// A workgroup of 64 lanes takes TQ query rows of one head, their q in workgroup memory,
// and walks the cache rows they see TK at a time, K and V tiles staged in workgroup
// memory once for all TQ rows (attend_rows reads them once per query row). Each step:
// - scores: lane (ty, tx) computes rows 4 ty .. 4 ty + 3 against keys 4 tx .. 4 tx + 3,
//   two vec4 loads per 16 FMAs, into p_s [key][row];
// - softmax: lane r < TQ owns row r's running max and sum (the online softmax of
//   attend_span: max_nan; exp(inf - inf) = NaN reaches the output as torch's gives it),
//   turning its scores into weights in place and its rescale factor into row_fix;
// - weigh: lane (og, od) keeps RO rows x 8 columns of the output in registers (columns
//   4 od and TD / 2 + 4 od: neighbouring lanes on neighbouring vec4s), rescaled, plus
//   the tile's weighted V. Only keys a row sees are added (a masked key's V may be
//   inf); tiles whose keys every row sees skip the test.
// Workgroup memory: 4 (3 TQ TD + 4 TD + TK TQ + TQ) bytes (ops/attention.py checks).
const TQ: u32 = 32u;  // query rows per workgroup
const TK: u32 = 32u;  // cache rows per step
const TD: u32 = ${dim}u;  // head dim
const RO: u32 = ${rows}u;  // output rows per lane
const DL: u32 = TD / 8u;  // lanes across the head dim
const KP: u32 = TK / 4u + 1u;  // a k_s row in vec4s, padded: the staging stores spread over banks
var<workgroup> q_s: array<vec4<f32>, TD * TQ / 4u>;  // [TD][TQ]
var<workgroup> k_s: array<vec4<f32>, TD * KP>;  // [TD][TK + 4]
var<workgroup> v_s: array<vec4<f32>, TK * TD / 4u>;  // [TK][TD]
var<workgroup> p_s: array<vec4<f32>, TK * TQ / 4u>;  // [TK][TQ]: scores, then weights
var<workgroup> row_fix: array<f32, TQ>;  // per row: exp(old max - new max); at the end, the sum
var<workgroup> tile_rows: u32;

// Cache rows c0 .. c0 + TK of K (transposed) and V into workgroup memory, zeros from hi.
fn stage_kv(c0: u32, hi: u32, start: u32, head_at: u32, lane: u32) {
  for (var i = lane; i < TK * TD; i += 64u) {
    let c = i / TD;
    let e = i % TD;
    let j = c0 + c;
    var kx = 0.0;
    var vx = 0.0;
    if (j < hi) {
      kx = key(j, start, head_at, e);
      vx = value(j, start, head_at + e);
    }
    k_s[e * KP + c / 4u][c % 4u] = kx;
    v_s[i / 4u][i % 4u] = vx;
  }
}

// The scaled scores of rows 4 ty + i and keys 4 tx + j into p_s, products added along
// the head dim in order (as score()).
fn scores(ty: u32, tx: u32) {
  var s0 = vec4<f32>(0.0);
  var s1 = vec4<f32>(0.0);
  var s2 = vec4<f32>(0.0);
  var s3 = vec4<f32>(0.0);
  for (var e = 0u; e < TD; e++) {
    let q4 = q_s[e * (TQ / 4u) + ty];
    let k4 = k_s[e * KP + tx];
    s0 += q4.x * k4;
    s1 += q4.y * k4;
    s2 += q4.z * k4;
    s3 += q4.w * k4;
  }
  let sc = params.scale;
  let at = 4u * tx * (TQ / 4u) + ty;
  p_s[at] = vec4<f32>(s0.x, s1.x, s2.x, s3.x) * sc;
  p_s[at + TQ / 4u] = vec4<f32>(s0.y, s1.y, s2.y, s3.y) * sc;
  p_s[at + 2u * (TQ / 4u)] = vec4<f32>(s0.z, s1.z, s2.z, s3.z) * sc;
  p_s[at + 3u * (TQ / 4u)] = vec4<f32>(s0.w, s1.w, s2.w, s3.w) * sc;
}

// Keys of the step at c0 that query row s sees.
fn seen(s: u32, c0: u32) -> u32 {
  let rows = visible(s);
  return min(TK, rows - min(rows, c0));
}

struct Running {
  top: f32,
  sum: f32,
}

// Row r's scores of the step turned into weights (0 past what it sees), its max and sum
// carried, its rescale factor into row_fix.
fn softmax_step(r: u32, m: u32, run: Running) -> Running {
  var next = run;
  var fix = 1.0;
  if (m > 0u) {
    var tile_top = -3.0e38;
    for (var c = 0u; c < m; c++) {
      tile_top = max_nan(tile_top, p_s[c * (TQ / 4u) + r / 4u][r % 4u]);
    }
    next.top = max_nan(run.top, tile_top);
    fix = exp(run.top - next.top);
    var part = 0.0;
    for (var c = 0u; c < m; c++) {
      let w = exp(p_s[c * (TQ / 4u) + r / 4u][r % 4u] - next.top);
      p_s[c * (TQ / 4u) + r / 4u][r % 4u] = w;
      part += w;
    }
    next.sum = run.sum * fix + part;
  }
  for (var c = m; c < TK; c++) {
    p_s[c * (TQ / 4u) + r / 4u][r % 4u] = 0.0;
  }
  row_fix[r] = fix;
  return next;
}

@compute @workgroup_size(64)
fn attend_tiles(@builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) lane: u32) {
  let H = params.heads;
  let g = group_index(wid, groups);
  let h = g % H;
  let s0 = (g / H) * TQ;
  let head_at = (h / (H / params.kv_heads)) * TD;
  let start = u32(max(ints[params.start_slot], 0));
  if (lane == 0u) {  // the most cache rows a row of the tile sees (uniform for barriers)
    var most = 0u;
    for (var r = 0u; r < TQ; r++) {
      most = max(most, visible(s0 + r));
    }
    tile_rows = most;
  }
  let hi = workgroupUniformLoad(&tile_rows);
  if (hi == 0u) {
    return;
  }
  for (var i = lane; i < TQ * TD; i += 64u) {
    let r = i / TD;
    let e = i % TD;
    var x = 0.0;
    if (visible(s0 + r) > 0u) {
      x = q_load(((s0 + r) * H + h) * TD + e);
    }
    q_s[e * (TQ / 4u) + r / 4u][r % 4u] = x;
  }
  let first = visible(s0);  // the fewest rows a row of the tile sees (the rows go up)
  var run = Running(-3.0e38, 0.0);
  var acc: array<vec4<f32>, 2u * RO>;  // zeros; constant indices only (generated weigh)
  for (var c0 = 0u; c0 < hi; c0 += TK) {
    workgroupBarrier();  // q_s written; the last step's tiles read
    stage_kv(c0, hi, start, head_at, lane);
    workgroupBarrier();
    scores(lane / 8u, lane % 8u);
    workgroupBarrier();
    if (lane < TQ) {
      run = softmax_step(lane, seen(s0 + lane, c0), run);
    }
    workgroupBarrier();
    weigh(&acc, s0, lane / DL, lane % DL, c0, c0 + TK <= first);
  }
  workgroupBarrier();  // row_fix read
  if (lane < TQ) {
    row_fix[lane] = run.sum;
  }
  workgroupBarrier();
  store_rows(&acc, s0, h, lane / DL, lane % DL);
  for (var i = lane; i < TQ * TD; i += 64u) {  // the tile's own rows into the caches
    if (visible(s0 + i / TD) > 0u) {
      keep(s0 + i / TD, h, head_at + i % TD);
    }
  }
}

// Output row s's columns 4 od .. + 3 and TD / 2 + 4 od .. + 3 (sum: its softmax's).
fn store_row(s: u32, h: u32, od: u32, lo: vec4<f32>, hi: vec4<f32>, sum: f32) {
  if (visible(s) == 0u) {
    return;
  }
  let at = (s * params.heads + h) * TD + 4u * od;
  let a = lo / sum;
  let b = hi / sum;
  out[at] = elem(a.x);
  out[at + 1u] = elem(a.y);
  out[at + 2u] = elem(a.z);
  out[at + 3u] = elem(a.w);
  out[at + TD / 2u] = elem(b.x);
  out[at + TD / 2u + 1u] = elem(b.y);
  out[at + TD / 2u + 2u] = elem(b.z);
  out[at + TD / 2u + 3u] = elem(b.w);
}
