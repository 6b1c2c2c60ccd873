// Tiled matrix-matrix form of out = input · weightᵀ + bias for prefill (and, with the
// operands' offsets, any batched product): each workgroup of tw x tw invocations
// computes one (8 tw) x (8 tw) output tile, each invocation an 8 x 8 block held in
// registers (rows ty*4 + {0..3} and 4 tw + ty*4 + {0..3}, likewise columns: the two
// halves keep neighbouring lanes on neighbouring vec4s of workgroup memory). K advances
// in steps of tk: both operands are K-contiguous ([M, K] and [N, K]), so lanes read
// global memory along K and store the step transposed, [tk][tile], where the inner loop
// reads one vec4 of four rows (or columns) at a time: 16 vec4 FMAs per 4 vec4 loads.
// Loads past M, N or K read as zero, so any sizes work. `k_steps` (matmul_parts.wgsl,
// chosen by ops/matmul.py) runs the K loop: staging each step by stage_scalar (any K) or
// stage_vec4 (K % 4 == 0; one entry point must use one view of each binding), or, in
// the vec4 form where a lane's share fits `Fetched`, loading step k0 + tk into registers
// while step k0 is computed (nothing else hides global latency with few workgroups per
// SM, as on an H100). With params.splits > 1 (split K, ops/split_k.py: few tiles, as at
// 1024 rows of a narrow N, leave most of the GPU idle while each runs the whole K loop)
// a workgroup takes one tile and one span of params.k_span of K, and `keep4`
// (matmul_parts.wgsl tile8_split) stores its partial sums for the entry sum_parts.
// Prelude (Params, bindings, `put`: where output (row, col) goes): shaders/compose.py
// from ops/matmul.py.

override tw: u32 = 16;  // invocations per side: tiles of 8 tw
override tk: u32 = 8;   // K per step, a multiple of 4

var<workgroup> a_s: array<vec4<f32>, 2u * tw * tk>;  // [tk][tile / 4] of input rows
var<workgroup> w_s: array<vec4<f32>, 2u * tw * tk>;  // [tk][tile / 4] of weight rows

fn stage_scalar(m0: u32, n0: u32, k0: u32, li: u32) {
  let tile = 8u * tw;
  for (var idx = li; idx < tile * tk; idx += tw * tw) {
    let r = idx / tk;
    let c = idx % tk;
    let kk = k0 + c;
    var a = 0.0;
    if (m0 + r < params.m && kk < params.k) {
      a = f32(input[(m0 + r) * params.k + kk]);
    }
    a_s[c * 2u * tw + r / 4u][r % 4u] = a;
    var w = 0.0;
    if (n0 + r < params.n && kk < params.k) {
      w = f32(weight[(n0 + r) * params.k + kk]);
    }
    w_s[c * 2u * tw + r / 4u][r % 4u] = w;
  }
}

// One vec4 of each operand: vec4 `idx` of a step (2 tw tk of them), row idx / (tk / 4)
// of the tile, K from k0 + 4 (idx % (tk / 4)); past M, N or K it reads as zero.
struct Quad { a: vec4<f32>, w: vec4<f32> }

fn load4(m0: u32, n0: u32, k0: u32, idx: u32) -> Quad {
  let k4 = params.k / 4u;
  let per_row = tk / 4u;
  let r = idx / per_row;
  let kq = (k0 + (idx % per_row) * 4u) / 4u;
  var q: Quad;  // zeros
  if (m0 + r < params.m && kq < k4) {
    q.a = vec4<f32>(input4[(m0 + r) * k4 + kq]);
  }
  if (n0 + r < params.n && kq < k4) {
    q.w = vec4<f32>(weight4[(n0 + r) * k4 + kq]);
  }
  return q;
}

// load4's vec4s stored transposed into workgroup memory, [tk][tile / 4].
fn put4(idx: u32, q: Quad) {
  let per_row = tk / 4u;
  let r = idx / per_row;
  let at = (idx % per_row) * 4u * 2u * tw + r / 4u;
  let i = r % 4u;
  let step = 2u * tw;
  a_s[at][i] = q.a.x;
  a_s[at + step][i] = q.a.y;
  a_s[at + 2u * step][i] = q.a.z;
  a_s[at + 3u * step][i] = q.a.w;
  w_s[at][i] = q.w.x;
  w_s[at + step][i] = q.w.y;
  w_s[at + 2u * step][i] = q.w.z;
  w_s[at + 3u * step][i] = q.w.w;
}

fn stage_vec4(m0: u32, n0: u32, k0: u32, li: u32) {
  for (var idx = li; idx < 2u * tw * tk; idx += tw * tw) {
    put4(idx, load4(m0, n0, k0, idx));
  }
}

// A lane's share of a step for the prefetching loop (tile8_prefetch): vec4s li + j tw²,
// j < 4, those below 2 tw tk (ops/matmul.py composes it only where 2 tk / tw <= 4).
// Named members, not an array: one indexed in a loop goes to local memory on NVIDIA.
struct Fetched { q0: Quad, q1: Quad, q2: Quad, q3: Quad }

fn fetch(m0: u32, n0: u32, k0: u32, li: u32) -> Fetched {
  let lanes = tw * tw;
  let count = 2u * tw * tk;
  var f: Fetched;
  if (li < count) { f.q0 = load4(m0, n0, k0, li); }
  if (li + lanes < count) { f.q1 = load4(m0, n0, k0, li + lanes); }
  if (li + 2u * lanes < count) { f.q2 = load4(m0, n0, k0, li + 2u * lanes); }
  if (li + 3u * lanes < count) { f.q3 = load4(m0, n0, k0, li + 3u * lanes); }
  return f;
}

fn put_fetched(f: Fetched, li: u32) {
  let lanes = tw * tw;
  let count = 2u * tw * tk;
  if (li < count) { put4(li, f.q0); }
  if (li + lanes < count) { put4(li + lanes, f.q1); }
  if (li + 2u * lanes < count) { put4(li + 2u * lanes, f.q2); }
  if (li + 3u * lanes < count) { put4(li + 3u * lanes, f.q3); }
}

@compute @workgroup_size(tw, tw)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let flat = wid.x + wid.y * groups.x;  // (tile, span) on a grid folded into 2-D
  if (flat >= params.tiles * params.splits) {
    return;  // uniform for the whole workgroup
  }
  let at = flat / params.splits;  // the first tiles' workgroups come first: a dynamic M's prefix
  let part = flat % params.splits;
  let tile = 8u * tw;
  let m0 = (at / params.tiles_n) * tile;
  let n0 = (at % params.tiles_n) * tile;
  let k_begin = part * params.k_span;  // whole steps of K (ops/split_k.py spans)
  let k_end = min(params.k, k_begin + params.k_span);
  // acc[2 i + h]: row i of the lane's 8 (0-3 low half, 4-7 high), column half h.
  // Indexed by constants only: indexed in a loop, NVIDIA's driver keeps it in local memory.
  var acc: array<vec4<f32>, 16>;
  k_steps(&acc, m0, n0, k_begin, k_end, lid, li);
  let r_lo = m0 + lid.y * 4u;
  let r_hi = r_lo + 4u * tw;
  let c_lo = n0 + lid.x * 4u;
  let c_hi = c_lo + 4u * tw;
  store_row(r_lo, c_lo, c_hi, acc[0], acc[1], part);
  store_row(r_lo + 1u, c_lo, c_hi, acc[2], acc[3], part);
  store_row(r_lo + 2u, c_lo, c_hi, acc[4], acc[5], part);
  store_row(r_lo + 3u, c_lo, c_hi, acc[6], acc[7], part);
  store_row(r_hi, c_lo, c_hi, acc[8], acc[9], part);
  store_row(r_hi + 1u, c_lo, c_hi, acc[10], acc[11], part);
  store_row(r_hi + 2u, c_lo, c_hi, acc[12], acc[13], part);
  store_row(r_hi + 3u, c_lo, c_hi, acc[14], acc[15], part);
}

// Columns c_lo..+3 and c_hi..+3 of one output row, those inside M x N, through keep4.
fn store_row(row: u32, c_lo: u32, c_hi: u32, lo: vec4<f32>, hi: vec4<f32>, part: u32) {
  if (row >= params.m) {
    return;
  }
  keep4(row, c_lo, lo, part);
  keep4(row, c_hi, hi, part);
}

fn store4(row: u32, col: u32, v: vec4<f32>) {
  var b = vec4<f32>(0.0);
  let last = params.n - 1u;
  if (params.has_bias == 1u) {
    b = vec4<f32>(f32(bias[min(col, last)]), f32(bias[min(col + 1u, last)]),
                  f32(bias[min(col + 2u, last)]), f32(bias[min(col + 3u, last)]));
  }
  let t = v + b;
  if (col < params.n) { put(row, col, t.x); }
  if (col + 1u < params.n) { put(row, col + 1u, t.y); }
  if (col + 2u < params.n) { put(row, col + 2u, t.z); }
  if (col + 3u < params.n) { put(row, col + 3u, t.w); }
}
