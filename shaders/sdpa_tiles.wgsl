// Flash attention for prefill (sdpa's `tiles` form), composed after sdpa_kv_cache.wgsl
// (visible, key, value, keep, q_load) by ops/attention_tiles.py, one kernel per head dim
// and tile plan: the consts and the unrolled per-lane steps (`scores`, `weigh`,
// `store_rows`) are generated there.
// A section runs from its `// ==== name` line to the next.
// ==== attend_tiles  the entry; ${dim}: head dim, ${tq}: query rows, ${rs}: score rows and ${ro}: output rows per lane, ${shared}: K and V share their tile
// A workgroup of 64 lanes takes TQ query rows of one head, their q in workgroup memory,
// and walks the cache rows they see TK at a time, K and V tiles staged in workgroup
// memory once for all TQ rows (attend_rows reads them once per query row). Each step:
// - scores: lane (ty, tx) computes rows RS ty .. RS ty + RS - 1 against keys 4 tx ..
//   4 tx + 3 (RS = TQ / 8), two vector loads per 4 RS FMAs, into p_s [key][row];
// - softmax: LPR = 64 / TQ lanes a row carry its running max and sum (the online
//   softmax of attend_span: max_nan; exp(inf - inf) = NaN reaches the output as torch's
//   gives it), turning its scores into weights in place and its rescale factor into
//   row_fix;
// - weigh: lane (og, od) keeps RO rows x 8 columns of the output in registers (columns
//   4 od and TD / 2 + 4 od: neighbouring lanes on neighbouring vec4s), rescaled, plus
//   the tile's weighted V. Only keys a row sees are added (a masked key's V may be
//   inf); tiles whose keys every row sees skip the test.
// - With SHARED_KV (large head dims: ops/attention_tiles.py plans the workgroup memory)
//   the V tile is staged where the K tile was, after the scores, beside the softmax.
// Key parts: a tile's keys are cut at multiples of span() into up to PARTS parts, a
// workgroup each (a short prefill's few tiles would otherwise leave most of a big GPU
// idle: 256 tokens on an H100, 32-row tiles, 2.8 -> 2.0 ms). A row that one part covers
// is written whole; the others leave each part's max, sum and weighted V in `parts`,
// which combine_tiles merges (as the split form's combine does a decode row's).
const TQ: u32 = ${tq}u;  // query rows per workgroup
const TK: u32 = 32u;  // cache rows per step
const TD: u32 = ${dim}u;  // head dim
const RS: u32 = ${rs}u;  // score rows per lane (TQ / 8)
const RO: u32 = ${ro}u;  // output rows per lane
const DL: u32 = TD / 8u;  // lanes across the head dim
const KP: u32 = TK / 4u + 1u;  // a K row in vec4s, padded: the staging stores spread over banks
const SHARED_KV: bool = ${shared};
const PARTS: u32 = ${parts}u;  // key parts a tile's keys are cut into at most
const MIN_STEPS: u32 = ${min_steps}u;  // a part's fewest steps of TK keys
const V_AT: u32 = ${v_at}u;  // where the V tile starts in kv_s: after K's, or at 0 (shared)
var<workgroup> q_s: array<vec${rs}<f32>, TD * TQ / RS>;  // [TD][TQ]
var<workgroup> kv_s: array<vec4<f32>, ${kv_size}u>;  // K [TD][TK + 4], V [TK][TD] at V_AT
var<workgroup> p_s: array<vec4<f32>, TK * TQ / 4u>;  // [TK][TQ]: scores, then weights
var<workgroup> row_fix: array<f32, TQ>;  // per row: exp(old max - new max); at the end, the sum
var<workgroup> row_top: array<f32, TQ>;  // at the end, per row: its max
var<workgroup> tile_rows: u32;

// K and V are read through their vec4 views alone (k4, v4, k_cache4, v_cache4: an entry
// point may use one view of a binding), four elements a load: quad e4 of row j of the
// KV head at head_at, below start from the cache, from start on from this call's rows.
fn row4(j: u32, head_at: u32, e4: u32) -> u32 {
  return (j * row_len() + head_at) / 4u + e4;
}

fn key4(j: u32, start: u32, head_at: u32, e4: u32) -> vec4<f32> {
  if (j < start) {
    return vec4<f32>(k_cache4[row4(j, head_at, e4)]);
  }
  return vec4<f32>(k4[row4(j - start, head_at, e4)]);
}

fn value4(j: u32, start: u32, head_at: u32, e4: u32) -> vec4<f32> {
  if (j < start) {
    return vec4<f32>(v_cache4[row4(j, head_at, e4)]);
  }
  return vec4<f32>(v4[row4(j - start, head_at, e4)]);
}

// The tile's own k and v rows into the caches, by each KV head's first query head (keep's
// work, through the vec4 views).
fn keep_rows(s0: u32, h: u32, head_at: u32, start: u32, lane: u32) {
  if (h % (params.heads / params.kv_heads) != 0u) {
    return;
  }
  for (var i = lane; i < TQ * TD / 4u; i += 64u) {
    let s = s0 + i / (TD / 4u);
    if (visible(s) > 0u && start + s < params.cache_rows) {
      let e4 = i % (TD / 4u);
      k_cache4[row4(start + s, head_at, e4)] = k4[row4(s, head_at, e4)];
      v_cache4[row4(start + s, head_at, e4)] = v4[row4(s, head_at, e4)];
    }
  }
}

// Keys per part: the most keys a row sees cut into PARTS spans of whole steps (at least
// MIN_STEPS each), the same for every row, tile and head of the call.
fn span() -> u32 {
  let rows = min(u32(max(ints[params.len_slot], 0)), params.s_bound);
  let keys = min(u32(max(ints[params.start_slot], 0)) + rows, params.cache_rows);
  let steps = (keys + TK - 1u) / TK;
  return TK * max(MIN_STEPS, (steps + PARTS - 1u) / PARTS);
}

// A workgroup's part: its index and the keys each part spans.
struct Part {
  p: u32,
  span: u32,
}

// How a step's rows are read (uniform: the staging's loads then go out together, no
// test between them): 0 all this call's and below hi, 1 all the cache's and below hi,
// 2 each row tested.
fn step_kind(c0: u32, hi: u32, start: u32) -> u32 {
  if (c0 >= start && c0 + TK <= hi) {
    return 0u;
  }
  if (c0 + TK <= min(start, hi)) {
    return 1u;
  }
  return 2u;
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

// The step's softmax, LPR = 64 / TQ lanes a row, each over TK / LPR keys: the row's
// scores turned into weights in place, its max and sum carried (every lane of the row
// holds them alike), its rescale factor into row_fix. Every lane calls it (barriers).
const LPR: u32 = 64u / TQ;
const KPL: u32 = TK / LPR;
var<workgroup> red: array<f32, 64>;

fn p_at(c: u32, r: u32) -> u32 {
  return c * (TQ / 4u) + r / 4u;
}

fn softmax_step(lane: u32, s0: u32, c0: u32, run: Running) -> Running {
  let r = lane / LPR;
  let lo = (lane % LPR) * KPL;
  let m = seen(s0 + r, c0);
  var top = -3.0e38;
  for (var c = lo; c < min(lo + KPL, m); c++) {
    top = max_nan(top, p_s[p_at(c, r)][r % 4u]);
  }
  red[lane] = top;
  workgroupBarrier();
  var tile_top = -3.0e38;
  for (var q = 0u; q < LPR; q++) {
    tile_top = max_nan(tile_top, red[r * LPR + q]);
  }
  workgroupBarrier();  // red read: the sums go there next
  var next = run;
  var fix = 1.0;
  if (m > 0u) {
    next.top = max_nan(run.top, tile_top);
    fix = exp(run.top - next.top);
  }
  var part = 0.0;
  for (var c = lo; c < lo + KPL; c++) {
    var w = 0.0;
    if (c < m) {
      w = exp(p_s[p_at(c, r)][r % 4u] - next.top);
    }
    p_s[p_at(c, r)][r % 4u] = w;
    part += w;
  }
  red[lane] = part;
  workgroupBarrier();
  if (m > 0u) {
    var total = 0.0;
    for (var q = 0u; q < LPR; q++) {
      total += red[r * LPR + q];
    }
    next.sum = run.sum * fix + total;
  }
  if (lane % LPR == 0u) {
    row_fix[r] = fix;
  }
  return next;
}

@compute @workgroup_size(64)
fn attend_tiles(@builtin(workgroup_id) wid: vec3<u32>,
                @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) lane: u32) {
  let H = params.heads;
  let g = group_index(wid, groups);  // (tile, part, head)
  let h = g % H;
  let part = Part((g / H) % PARTS, span());
  // The last query rows see the most cache rows: their tiles take the first workgroups,
  // which start first, so the longest ones do not trail the rest.
  let tiles = (min(u32(max(ints[params.len_slot], 0)), params.s_bound) + TQ - 1u) / TQ;
  let tile = g / (H * PARTS);
  var s0 = params.s_bound;  // past the rows: nothing to do
  if (tile < tiles) {
    s0 = (tiles - 1u - tile) * TQ;
  }
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
  let lo = part.p * part.span;  // this part's keys: lo .. end - 1
  if (lo >= hi) {
    return;  // (also a tile past the rows: hi 0)
  }
  let end = min(lo + part.span, hi);
  for (var i = lane; i < TQ * TD; i += 64u) {
    let r = i / TD;
    let e = i % TD;
    var x = 0.0;
    if (visible(s0 + r) > 0u) {
      x = q_load(((s0 + r) * H + h) * TD + e);
    }
    q_s[e * (TQ / RS) + r / RS][r % RS] = x;
  }
  let first = visible(s0);  // the fewest rows a row of the tile sees (the rows go up)
  var run = Running(-3.0e38, 0.0);
  var acc: array<vec4<f32>, 2u * RO>;  // zeros; constant indices only (generated weigh)
  for (var c0 = lo; c0 < end; c0 += TK) {
    workgroupBarrier();  // q_s written; the last step's tiles read
    let kind = step_kind(c0, hi, start);
    stage_k(c0, hi, start, head_at, lane, kind);
    if (!SHARED_KV) {
      stage_v(c0, hi, start, head_at, lane, kind);
    }
    workgroupBarrier();
    scores(lane / 8u, lane % 8u);
    workgroupBarrier();
    if (SHARED_KV) {
      stage_v(c0, hi, start, head_at, lane, kind);
    }
    run = softmax_step(lane, s0, c0, run);
    workgroupBarrier();
    weigh(&acc, s0, lane / DL, lane % DL, c0, c0 + TK <= first);
  }
  workgroupBarrier();  // row_fix read
  if (lane % LPR == 0u) {
    row_fix[lane / LPR] = run.sum;
    row_top[lane / LPR] = run.top;
  }
  workgroupBarrier();
  store_rows(&acc, s0, h, lane / DL, lane % DL, part);
  if (part.p == 0u) {
    keep_rows(s0, h, head_at, start, lane);
  }
}

// Output row s's columns 4 od .. + 3 and TD / 2 + 4 od .. + 3 (sum, top: its softmax's
// over the part's keys): the row itself where one part covers it, else the part's share
// in `parts` ((s, h, part): max, sum, then TD weighted-V sums) for combine_tiles.
fn store_row(s: u32, h: u32, od: u32, lo: vec4<f32>, hi: vec4<f32>, sum: f32, top: f32,
             part: Part) {
  let rows = visible(s);
  if (rows <= part.p * part.span) {
    return;  // no key of this part (or no row)
  }
  if (rows > part.span) {
    let share = ((s * params.heads + h) * PARTS + part.p) * (TD + 2u);
    if (od == 0u) {
      parts[share] = top;
      parts[share + 1u] = sum;
    }
    let col = share + 2u + 4u * od;
    parts[col] = lo.x;
    parts[col + 1u] = lo.y;
    parts[col + 2u] = lo.z;
    parts[col + 3u] = lo.w;
    parts[col + TD / 2u] = hi.x;
    parts[col + TD / 2u + 1u] = hi.y;
    parts[col + TD / 2u + 2u] = hi.z;
    parts[col + TD / 2u + 3u] = hi.w;
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

// combine_tiles: a workgroup per (s, h) whose row more than one part covers merges the
// parts' shares (combine's merge).
@compute @workgroup_size(wg_size)
fn combine_tiles(@builtin(workgroup_id) wid: vec3<u32>,
                 @builtin(num_workgroups) groups: vec3<u32>,
                 @builtin(local_invocation_index) lane: u32) {
  let g = group_index(wid, groups);  // (s, h)
  let rows = visible_uniform(g / params.heads, lane);
  let per = span();
  if (rows <= per) {
    return;  // one part, written whole (or no row)
  }
  merge_parts(g, g * PARTS, (rows + per - 1u) / per, lane);
}
