// sdpa_with_kv_cache: causal attention of each query row s over cache rows [0, start + s],
// the rows [start, start + S) being this call's k and v, which the kernel also writes into
// the caches; query head h reads KV head h / (H / Hkv) (GQA). Layouts: q/out [S, H, D],
// k/v [S, Hkv, D], caches [T, Hkv, D] (batch 1). start and S are read at execute from
// `ints` (runtime/dynamic.py), so one recording serves every position and every prefill
// length up to the bound. Prelude (Params, bindings): shaders/compose.py, ops/attention.py.
//
// One dispatch both writes and reads the caches without a race: rows below start are read
// from the caches, rows from start on straight from k and v, and only those rows are
// written (by the workgroups or invocations of each KV head's first query head).
//
// Entries: `attend` (one invocation per output element; recomputes its row's scores, no
// workgroup memory or barriers), `attend_rows` (one workgroup per (s, h)), and the
// flash-decoding pair `attend_split` (one workgroup per (s, h, part): the visible rows cut
// into params.parts spans of MIN_SPAN rows or more, each reduced to a partial max, sum and
// weighted v) and
// `combine` (a workgroup per (s, h) merges its parts); `attend_tiles` (prefill, flash
// attention) is shaders/sdpa_tiles.wgsl, composed with this file. Entry `update`
// (llama's update_cache alone): value rows [0, S) into k_cache rows [start, start + S),
// through the bindings k and k_cache.
//
// q and k are read through q_load / k_load (generated, ops/attention.py): plain loads, or
// with the llama example's RoPE folded in (pte_webgpu.sdpa_rope), each element rotated
// with its pair as it is read, so the rotated q and k are never stored apart.
override wg_size: u32 = 64;

// The query row a workgroup attends with, loaded once by attend_span (the rows and split
// forms, whose workgroups hold head_dim <= Q_HELD lanes: ops/attention.py checks).
const Q_HELD: u32 = 256u;
var<workgroup> q_held: array<f32, Q_HELD>;

fn visible(s: u32) -> u32 {  // cache rows query row s sees; 0 past the actual rows
  if (s >= params.s_bound || i32(s) >= ints[params.len_slot]) {
    return 0u;
  }
  return min(u32(max(ints[params.start_slot], 0)) + s + 1u, params.cache_rows);
}

fn row_len() -> u32 {
  return params.kv_heads * params.head_dim;
}

// q . key row j of the KV head whose first element is at head_at (key: below).
fn score(q_at: u32, j: u32, start: u32, head_at: u32) -> f32 {
  let D = params.head_dim;
  var dot = 0.0;
  var e = 0u;
  for (; e + 4u <= D; e += 4u) {  // four loads in flight, the products added in order
    let k0 = key(j, start, head_at, e);
    let k1 = key(j, start, head_at, e + 1u);
    let k2 = key(j, start, head_at, e + 2u);
    let k3 = key(j, start, head_at, e + 3u);
    dot += q_load(q_at + e) * k0;
    dot += q_load(q_at + e + 1u) * k1;
    dot += q_load(q_at + e + 2u) * k2;
    dot += q_load(q_at + e + 3u) * k3;
  }
  for (; e < D; e++) {
    dot += q_load(q_at + e) * key(j, start, head_at, e);
  }
  return dot * params.scale;
}

// Element d of value row j (head_d: the KV head's offset plus d).
fn value(j: u32, start: u32, head_d: u32) -> f32 {
  if (j < start) {
    return f32(v_cache[j * row_len() + head_d]);
  }
  return f32(v[(j - start) * row_len() + head_d]);
}

// Query row s's own k/v element (head_d) into the caches, by the KV head's first query
// head only (its other heads would write the same values).
fn keep(s: u32, h: u32, head_d: u32) {
  if (h % (params.heads / params.kv_heads) == 0u) {
    let row = u32(max(ints[params.start_slot], 0)) + s;
    if (row < params.cache_rows) {
      k_cache[row * row_len() + head_d] = elem(k_load(s * row_len() + head_d));
      v_cache[row * row_len() + head_d] = v[s * row_len() + head_d];
    }
  }
}

@compute @workgroup_size(wg_size)
fn attend(@builtin(global_invocation_id) gid: vec3<u32>,
          @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat_index(gid, groups);
  let D = params.head_dim;
  let H = params.heads;
  let s = i / (H * D);
  let rows = visible(s);
  if (rows == 0u) {
    return;
  }
  let h = (i / D) % H;
  let d = i % D;
  let head_at = (h / (H / params.kv_heads)) * D;
  let q_at = (s * H + h) * D;
  let start = u32(max(ints[params.start_slot], 0));
  out[i] = elem(softmax_weighted(Row(q_at, start, head_at, d), rows));
  keep(s, h, head_at + d);
}

// What `attend`'s softmax_weighted (snippets.wgsl) scores and weighs: cache row j.
struct Row {
  q_at: u32,
  start: u32,
  head_at: u32,
  d: u32,
}

fn row_score(r: Row, j: u32) -> f32 {
  return score(r.q_at, j, r.start, r.head_at);
}

fn row_value(r: Row, j: u32) -> f32 {
  return value(j, r.start, r.head_at + r.d);
}

// The softmax-weighted v of rows [lo, hi) for one (s, h): lane d's share of the output
// (acc, for d < D) and the span's max and sum. Lanes score CHUNK rows at a time (a row
// each, so every score is computed once), meet at the chunk's max (snippet `tree`), turn
// the scores into weights in workgroup memory, and lane d adds weight * v[row, d]; the
// running max and sum carry from chunk to chunk (online softmax). NaN and inf scores
// reach the output as torch's softmax gives them (max_nan, exp(inf - inf) = NaN).
// Every lane must call it (barriers).
struct Span {
  top: f32,
  sum: f32,
  acc: f32,
}

const CHUNK: u32 = 256u;
var<workgroup> weights: array<f32, CHUNK>;
var<workgroup> uniform_rows: u32;

// visible(s), read by lane 0 and made uniform for the barriers that follow.
fn visible_uniform(s: u32, lane: u32) -> u32 {
  if (lane == 0u) {
    uniform_rows = visible(s);
  }
  return workgroupUniformLoad(&uniform_rows);
}

// Rows j .. j + 3 of v at head_d, and their weights from r: loaded together, so their
// loads are in flight at once (a vec4, not an array a loop indexes: that may go to local
// memory).
fn values4(j: u32, start: u32, head_d: u32) -> vec4<f32> {
  return vec4<f32>(value(j, start, head_d), value(j + 1u, start, head_d),
                   value(j + 2u, start, head_d), value(j + 3u, start, head_d));
}

fn weights4(r: u32) -> vec4<f32> {
  return vec4<f32>(weights[r], weights[r + 1u], weights[r + 2u], weights[r + 3u]);
}

// (sum, weighted sum) after four more rows, added one row at a time.
fn add4(run: vec2<f32>, w: vec4<f32>, v: vec4<f32>) -> vec2<f32> {
  var s = run;
  s.x += w.x;
  s.y += w.x * v.x;
  s.x += w.y;
  s.y += w.y * v.y;
  s.x += w.z;
  s.y += w.z * v.z;
  s.x += w.w;
  s.y += w.w * v.w;
  return s;
}

// Scores: G lanes share a key row (score_lanes), lane g adding the products of elements
// g, g + G, g + 2G, ... (neighbouring lanes read neighbouring elements), four rows at a
// time: each lane has 16 loads in flight where one lane a row waited on D / 4 rounds of
// loads in turn (on an H100 most of a decode step's attention). A row's G sums then meet
// in workgroup memory, added in lane order.
const DOT_PARTS: u32 = 1024u;
var<workgroup> dot_parts: array<f32, DOT_PARTS>;

fn score_lanes() -> u32 {  // the largest power of two <= D / 4, at most wg_size
  let want = max(params.head_dim / 4u, 1u);
  return min(1u << (31u - countLeadingZeros(want)), wg_size);
}

// Element e of key row j of the KV head at head_at: the cache's below start, this call's
// k (turned where the RoPE is folded in) from start on.
fn key(j: u32, start: u32, head_at: u32, e: u32) -> f32 {
  if (j < start) {
    return f32(k_cache[j * row_len() + head_at + e]);
  }
  return k_load((j - start) * row_len() + head_at + e);
}

// q_held . key row j over the elements e, e + G, e + 2G, e + 3G below D.
fn dot4(j: u32, start: u32, head_at: u32, e: u32, G: u32) -> f32 {
  let at = vec4<u32>(e, e + G, e + 2u * G, e + 3u * G);
  let c = min(at, vec4<u32>(params.head_dim - 1u));
  let k4 = vec4<f32>(key(j, start, head_at, c.x), key(j, start, head_at, c.y),
                     key(j, start, head_at, c.z), key(j, start, head_at, c.w));
  let q4 = vec4<f32>(q_held[c.x], q_held[c.y], q_held[c.z], q_held[c.w]);
  let p = select(vec4<f32>(0.0), q4 * k4, at < vec4<u32>(params.head_dim));
  return ((p.x + p.y) + p.z) + p.w;
}

// The scaled scores of rows c0 + r, r < m (m <= DOT_PARTS / G), into weights[w + r];
// returns the lane's largest (max_nan). Every lane must call it (barriers).
fn score_rows(c0: u32, m: u32, w: u32, start: u32, head_at: u32, lane: u32) -> f32 {
  let G = score_lanes();
  let g = lane % G;
  let step = wg_size / G;  // rows a round
  for (var r = lane / G; r < m; r += 4u * step) {
    let last = c0 + m - 1u;  // rows past the span are clamped, their sums not kept
    let j = min(vec4<u32>(c0 + r) + vec4<u32>(0u, step, 2u * step, 3u * step),
                vec4<u32>(last));
    var d = vec4<f32>(0.0);
    for (var e = g; e < params.head_dim; e += 4u * G) {
      d += vec4<f32>(dot4(j.x, start, head_at, e, G), dot4(j.y, start, head_at, e, G),
                     dot4(j.z, start, head_at, e, G), dot4(j.w, start, head_at, e, G));
    }
    dot_parts[r * G + g] = d.x;
    if (r + step < m) {
      dot_parts[(r + step) * G + g] = d.y;
    }
    if (r + 2u * step < m) {
      dot_parts[(r + 2u * step) * G + g] = d.z;
    }
    if (r + 3u * step < m) {
      dot_parts[(r + 3u * step) * G + g] = d.w;
    }
  }
  workgroupBarrier();
  var top = -3.0e38;
  for (var r = lane; r < m; r += wg_size) {
    var dot = 0.0;
    for (var i = 0u; i < G; i++) {
      dot += dot_parts[r * G + i];
    }
    let x = dot * params.scale;
    weights[w + r] = x;
    top = max_nan(top, x);
  }
  workgroupBarrier();  // dot_parts is reused by the next rows
  return top;
}

fn attend_span(q_at: u32, head_at: u32, lo: u32, hi: u32, lane: u32) -> Span {
  let start = u32(max(ints[params.start_slot], 0));
  if (lane < params.head_dim) {
    q_held[lane] = q_load(q_at + lane);
  }
  workgroupBarrier();
  var run = Span(-3.0e38, 0.0, 0.0);
  let sub = DOT_PARTS / score_lanes();  // rows scored at once
  for (var c0 = lo; c0 < hi; c0 += CHUNK) {
    let m = min(CHUNK, hi - c0);
    var top = -3.0e38;
    for (var s0 = 0u; s0 < m; s0 += sub) {
      top = max_nan(top, score_rows(c0 + s0, min(sub, m - s0), s0, start, head_at, lane));
    }
    let new_max = max_nan(run.top, tree(lane, wg_size, top, true));  // barriers inside
    for (var r = lane; r < m; r += wg_size) {
      weights[r] = exp(weights[r] - new_max);
    }
    workgroupBarrier();
    if (lane < params.head_dim) {
      let fix = exp(run.top - new_max);
      var run4 = vec2<f32>(0.0);  // (sum, weighted sum), added in row order
      var r = 0u;
      for (; r + 16u <= m; r += 16u) {  // sixteen loads in flight
        let va = values4(c0 + r, start, head_at + lane);
        let vb = values4(c0 + r + 4u, start, head_at + lane);
        let vc = values4(c0 + r + 8u, start, head_at + lane);
        let vd = values4(c0 + r + 12u, start, head_at + lane);
        run4 = add4(add4(run4, weights4(r), va), weights4(r + 4u), vb);
        run4 = add4(add4(run4, weights4(r + 8u), vc), weights4(r + 12u), vd);
      }
      for (; r + 4u <= m; r += 4u) {
        run4 = add4(run4, weights4(r), values4(c0 + r, start, head_at + lane));
      }
      for (; r < m; r++) {
        let w = weights[r];
        run4 += vec2<f32>(w, w * value(c0 + r, start, head_at + lane));
      }
      run.acc = run.acc * fix + run4.y;
      run.sum = run.sum * fix + run4.x;
    }
    run.top = new_max;
    workgroupBarrier();  // the weights of the next chunk overwrite these
  }
  return run;
}

// What workgroup g of a grid of (s, h, part) over `parts` parts works on: its query row,
// head and part, where its head's q/out row and KV head start, and the visible cache rows
// (made uniform for the barriers that follow).
struct Job {
  s: u32,
  h: u32,
  p: u32,
  q_at: u32,
  head_at: u32,
  rows: u32,
}

fn job(g: u32, parts: u32, lane: u32) -> Job {
  let H = params.heads;
  let D = params.head_dim;
  let s = g / (H * parts);
  let h = (g / parts) % H;
  let rows = visible_uniform(s, lane);
  return Job(s, h, g % parts, (s * H + h) * D, (h / (H / params.kv_heads)) * D, rows);
}

@compute @workgroup_size(wg_size)
fn attend_rows(@builtin(workgroup_id) wid: vec3<u32>,
               @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) lane: u32) {
  let j = job(group_index(wid, groups), 1u, lane);
  if (j.rows == 0u) {
    return;
  }
  let run = attend_span(j.q_at, j.head_at, 0u, j.rows, lane);
  if (lane < params.head_dim) {
    out[j.q_at + lane] = elem(run.acc / run.sum);
    keep(j.s, j.h, j.head_at + lane);
  }
}

// Rows a part takes: the visible rows cut into params.parts spans, but at least
// MIN_SPAN rows each, so short contexts use few parts (and combine merges few).
const MIN_SPAN: u32 = 16u;

fn span_rows(rows: u32) -> u32 {
  return max((rows + params.parts - 1u) / params.parts, MIN_SPAN);
}

// parts: per (s, h, part) the span's max, sum, then D weighted-v sums.
@compute @workgroup_size(wg_size)
fn attend_split(@builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) lane: u32) {
  let D = params.head_dim;
  let g = group_index(wid, groups);
  let j = job(g, params.parts, lane);
  if (j.rows == 0u) {
    return;
  }
  let per = span_rows(j.rows);
  let lo = min(j.p * per, j.rows);
  var run = Span(-3.0e38, 0.0, 0.0);  // an empty part (combine skips it, a merge does not)
  if (lo < j.rows) {
    run = attend_span(j.q_at, j.head_at, lo, min(lo + per, j.rows), lane);
  }
  let at = g * (D + 2u);
  if (lane == 0u) {
    parts[at] = run.top;
    parts[at + 1u] = run.sum;
  }
  if (lane < D) {
    parts[at + 2u + lane] = run.acc;
    if (j.p == 0u) {
      keep(j.s, j.h, j.head_at + lane);
    }
  }
}

// combine: a workgroup per (s, h) merges its parts. The lanes find the parts' largest max
// (a tree), put each part's factor exp(max_p - max) and its scaled sum in workgroup
// memory, then lane d adds the parts' scaled v, eight loads in flight at a time: one
// invocation looping over the parts alone waited on each load in turn (25 µs a
// dispatch on an H100). The sums are added in part order, as before.
const PARTS_HELD: u32 = 64u;  // ops/attention.py MAX_PARTS at most
var<workgroup> factor: array<f32, PARTS_HELD>;
var<workgroup> scaled_sum: array<f32, PARTS_HELD>;

// Four parts' values at `at`, `stride` apart (loaded together), and their factors.
fn parts4(at: u32, stride: u32) -> vec4<f32> {
  return vec4<f32>(parts[at], parts[at + stride], parts[at + 2u * stride],
                   parts[at + 3u * stride]);
}

fn factors4(p: u32) -> vec4<f32> {
  return vec4<f32>(factor[p], factor[p + 1u], factor[p + 2u], factor[p + 3u]);
}

// acc + f.x a.x + ... + f.w a.w, added in that order.
fn scaled_add4(acc: f32, f: vec4<f32>, a: vec4<f32>) -> f32 {
  var s = acc;
  s += f.x * a.x;
  s += f.y * a.y;
  s += f.z * a.z;
  s += f.w * a.w;
  return s;
}

@compute @workgroup_size(wg_size)
fn combine(@builtin(workgroup_id) wid: vec3<u32>,
           @builtin(num_workgroups) groups: vec3<u32>,
           @builtin(local_invocation_index) lane: u32) {
  let g = group_index(wid, groups);  // (s, h)
  let rows = visible_uniform(g / params.heads, lane);
  if (rows == 0u) {
    return;
  }
  let per = span_rows(rows);
  // the parts that hold rows (the rest are empty)
  merge_parts(g, g * params.parts, (rows + per - 1u) / per, lane);
}

// Output row-head g (out[g D ..]) from parts first .. first + P - 1 (max, sum, D weighted
// v sums each). Every lane calls it (barriers).
fn merge_parts(g: u32, first: u32, P: u32, lane: u32) {
  let D = params.head_dim;
  let stride = D + 2u;
  var top = -3.0e38;
  for (var p = lane; p < P; p += wg_size) {
    top = max_nan(top, parts[(first + p) * stride]);
  }
  top = tree(lane, wg_size, top, true);  // barriers inside
  for (var p = lane; p < P; p += wg_size) {
    let at = (first + p) * stride;
    let fix = exp(parts[at] - top);
    factor[p] = fix;
    scaled_sum[p] = fix * parts[at + 1u];
  }
  workgroupBarrier();
  var sum = 0.0;
  for (var p = 0u; p < P; p++) {
    sum += scaled_sum[p];
  }
  for (var d = lane; d < D; d += wg_size) {
    var acc = 0.0;
    var p = 0u;
    for (; p + 8u <= P; p += 8u) {
      let at = (first + p) * stride + 2u + d;
      let a = parts4(at, stride);
      let b = parts4(at + 4u * stride, stride);
      acc = scaled_add4(scaled_add4(acc, factors4(p), a), factors4(p + 4u), b);
    }
    for (; p < P; p++) {
      acc += factor[p] * parts[(first + p) * stride + 2u + d];
    }
    out[g * D + d] = elem(acc / sum);
  }
}

// update_cache: element i of value [S, Hkv, D] (bound S; rows past the actual S skipped)
// into its cache row start + s.
@compute @workgroup_size(wg_size)
fn update(@builtin(global_invocation_id) gid: vec3<u32>,
          @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat_index(gid, groups);
  let s = i / row_len();
  if (s >= params.s_bound || i32(s) >= ints[params.len_slot]) {
    return;
  }
  let row = u32(max(ints[params.start_slot], 0)) + s;
  if (row < params.cache_rows) {
    k_cache[row * row_len() + i % row_len()] = k[i];
  }
}
