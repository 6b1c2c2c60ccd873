// 4-bit weight linears: out = input · dequant(weight)ᵀ + bias, f32 accumulation
// (et_vk.linear_q4gsw, et_vk.linear_qcs4w: ops/linear_q4.py; layouts in
// docs/quantized-formats.md). The weight is [N, words] u32: word wi of column n holds
// k = 8 wi .. 8 wi + 7, nibble i (bits 4i .. 4i + 3) is element 8 wi + i, stored + 8.
// One u32 load gives 8 weights; their value is (nibble - 8) * scale[k / group, n].
// Columns are split into up to three stacked parts (linears sharing an input,
// runtime/fusion.py): part p's scales begin at `s_offp` with row stride `s_stridep`.
// K may not fill the last word (ExecuTorch pads K to a multiple of 8 with zeros): the
// input past K reads as 0, never out of its row.
// Three forms, all entry points of this body (the prelude, `put` and the lane sums of
// the gemv forms are composed: shaders/linear_q4_parts.wgsl, ops/linear_q4.py):
// - dot: one output per invocation, no workgroup memory, no barrier (CPU adapters);
// - gemv: one column and up to 4 rows per workgroup, the lanes sweep K together;
// - tiled: 32 x 32 outputs per workgroup of 8 x 8 lanes, 4 x 4 each, K in steps of 32
//   through workgroup memory (prefill).

override wg_size: u32 = 64;

struct W8 {
  a: vec4<f32>,  // elements 0..3 of the word
  b: vec4<f32>,  // elements 4..7
}

fn scale_index(g: u32, col: u32) -> u32 {
  if (col < params.n0) {
    return g * params.s_stride0 + col;
  }
  if (col < params.n1) {
    return params.s_off1 + g * params.s_stride1 + col - params.n0;
  }
  return params.s_off2 + g * params.s_stride2 + col - params.n1;
}

fn scale_at(k: u32, col: u32) -> f32 {
  return f32(scales[scale_index(min(k, params.k - 1u) / params.group, col)]);
}

// The 8 weights of word `wi` of column `col`, dequantized.
fn weights8(col: u32, wi: u32) -> W8 {
  let w = weight[col * params.words + wi];
  let a = vec4<f32>(f32(w & 15u), f32((w >> 4u) & 15u), f32((w >> 8u) & 15u),
                    f32((w >> 12u) & 15u)) - 8.0;
  let b = vec4<f32>(f32((w >> 16u) & 15u), f32((w >> 20u) & 15u), f32((w >> 24u) & 15u),
                    f32(w >> 28u)) - 8.0;
  let k0 = 8u * wi;
  if (params.group % 8u == 0u) {  // the whole word is in one group
    let s = scale_at(k0, col);
    return W8(a * s, b * s);
  }
  let sa = vec4<f32>(scale_at(k0, col), scale_at(k0 + 1u, col), scale_at(k0 + 2u, col),
                     scale_at(k0 + 3u, col));
  let sb = vec4<f32>(scale_at(k0 + 4u, col), scale_at(k0 + 5u, col), scale_at(k0 + 6u, col),
                     scale_at(k0 + 7u, col));
  return W8(a * sa, b * sb);
}

fn x_at(base: u32, k: u32) -> f32 {
  if (k < params.k) {
    return f32(input[base + k]);
  }
  return 0.0;
}

// Row `row`'s input elements of word `wi` (0 past K).
fn x8(row: u32, wi: u32) -> W8 {
  let base = row * params.k;
  let k0 = 8u * wi;
  if (k0 + 8u <= params.k) {
    return W8(vec4<f32>(f32(input[base + k0]), f32(input[base + k0 + 1u]),
                        f32(input[base + k0 + 2u]), f32(input[base + k0 + 3u])),
              vec4<f32>(f32(input[base + k0 + 4u]), f32(input[base + k0 + 5u]),
                        f32(input[base + k0 + 6u]), f32(input[base + k0 + 7u])));
  }
  return W8(vec4<f32>(x_at(base, k0), x_at(base, k0 + 1u), x_at(base, k0 + 2u),
                      x_at(base, k0 + 3u)),
            vec4<f32>(x_at(base, k0 + 4u), x_at(base, k0 + 5u), x_at(base, k0 + 6u),
                      x_at(base, k0 + 7u)));
}

fn dot8(x: W8, w: W8) -> f32 {
  return dot(x.a, w.a) + dot(x.b, w.b);
}

fn bias_at(col: u32) -> f32 {
  if (params.has_bias == 1u) {
    return f32(bias[col]);
  }
  return 0.0;
}

// --- dot: one output per invocation --------------------------------------------------
fn dot_item(i: u32) {
  let row = i / params.n;
  let col = i % params.n;
  var s = 0.0;
  for (var wi = 0u; wi < params.words; wi++) {
    s += dot8(x8(row, wi), weights8(col, wi));
  }
  put(row, col, s + bias_at(col));
}

// --- gemv: workgroup g is column g % n of rows 4 (g / n) .. + 3 -----------------------
// This lane's share of the workgroup's sums (components: the rows).
fn gemv_partial(g: u32, lane: u32) -> vec4<f32> {
  let col = g % params.n;
  let row0 = (g / params.n) * 4u;
  let rows = min(4u, params.m - row0);
  var s = vec4<f32>(0.0);
  for (var wi = lane; wi < params.words; wi += wg_size) {
    let w = weights8(col, wi);
    s.x += dot8(x8(row0, wi), w);
    if (rows > 1u) { s.y += dot8(x8(row0 + 1u, wi), w); }
    if (rows > 2u) { s.z += dot8(x8(row0 + 2u, wi), w); }
    if (rows > 3u) { s.w += dot8(x8(row0 + 3u, wi), w); }
  }
  return s;
}

// The workgroup's total `t`, written by one lane.
fn gemv_write(g: u32, t: vec4<f32>) {
  let col = g % params.n;
  let row0 = (g / params.n) * 4u;
  let rows = min(4u, params.m - row0);
  let v = t + bias_at(col);
  put(row0, col, v.x);
  if (rows > 1u) { put(row0 + 1u, col, v.y); }
  if (rows > 2u) { put(row0 + 2u, col, v.z); }
  if (rows > 3u) { put(row0 + 3u, col, v.w); }
}

// --- tiled: workgroup g is tile (g / tiles_n, g % tiles_n) of 32 x 32 -----------------
const TILE: u32 = 32u;
const TK: u32 = 32u;  // K per step: 4 words
var<workgroup> x_tile: array<f32, 1024>;  // [row][k]
var<workgroup> w_tile: array<f32, 1024>;  // [col][k]

fn tiled_item(g: u32, lane: u32) {
  let r0 = (g / params.tiles_n) * TILE;
  let c0 = (g % params.tiles_n) * TILE;
  let ty = lane / 8u;
  let tx = lane % 8u;
  var acc0 = vec4<f32>(0.0);  // row 4 ty + i, columns 4 tx .. 4 tx + 3
  var acc1 = vec4<f32>(0.0);
  var acc2 = vec4<f32>(0.0);
  var acc3 = vec4<f32>(0.0);
  let steps = (params.words + 3u) / 4u;
  for (var st = 0u; st < steps; st++) {
    let k0 = st * TK;
    // 1024 inputs: 16 per lane, consecutive lanes on consecutive k
    for (var e = lane; e < TILE * TK; e += 64u) {
      let r = e / TK;
      let kk = e % TK;
      let row = r0 + r;
      var v = 0.0;
      if (row < params.m && k0 + kk < params.k) {
        v = f32(input[row * params.k + k0 + kk]);
      }
      x_tile[e] = v;
    }
    // 32 columns x 4 words: 2 words per lane
    for (var e = lane; e < TILE * 4u; e += 64u) {
      let c = e / 4u;
      let wi = st * 4u + e % 4u;
      let at = c * TK + (e % 4u) * 8u;
      var w = W8(vec4<f32>(0.0), vec4<f32>(0.0));
      if (c0 + c < params.n && wi < params.words) {
        w = weights8(c0 + c, wi);
      }
      w_tile[at] = w.a.x;
      w_tile[at + 1u] = w.a.y;
      w_tile[at + 2u] = w.a.z;
      w_tile[at + 3u] = w.a.w;
      w_tile[at + 4u] = w.b.x;
      w_tile[at + 5u] = w.b.y;
      w_tile[at + 6u] = w.b.z;
      w_tile[at + 7u] = w.b.w;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      let wv = vec4<f32>(w_tile[(4u * tx) * TK + kk], w_tile[(4u * tx + 1u) * TK + kk],
                         w_tile[(4u * tx + 2u) * TK + kk], w_tile[(4u * tx + 3u) * TK + kk]);
      acc0 += x_tile[(4u * ty) * TK + kk] * wv;
      acc1 += x_tile[(4u * ty + 1u) * TK + kk] * wv;
      acc2 += x_tile[(4u * ty + 2u) * TK + kk] * wv;
      acc3 += x_tile[(4u * ty + 3u) * TK + kk] * wv;
    }
    workgroupBarrier();
  }
  tile_write(r0 + 4u * ty, c0 + 4u * tx, acc0);
  tile_write(r0 + 4u * ty + 1u, c0 + 4u * tx, acc1);
  tile_write(r0 + 4u * ty + 2u, c0 + 4u * tx, acc2);
  tile_write(r0 + 4u * ty + 3u, c0 + 4u * tx, acc3);
}

// Row `row`, columns col .. col + 3 (those inside the output).
fn tile_write(row: u32, col: u32, v: vec4<f32>) {
  if (row >= params.m) {
    return;
  }
  for (var c = 0u; c < 4u; c++) {
    if (col + c < params.n) {
      put(row, col + c, v[c] + bias_at(col + c));
    }
  }
}
