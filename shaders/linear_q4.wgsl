// 4-bit weight linears: out = input · dequant(weight)ᵀ + bias, f32 accumulation
// (et_vk.linear_q4gsw, et_vk.linear_qcs4w: ops/linear_q4.py; layouts in
// docs/quantized-formats.md). The weight is [N, words] u32: word wi of column n holds
// k = 8 wi .. 8 wi + 7, nibble i (bits 4i .. 4i + 3) is element 8 wi + i, stored + 8.
// One u32 load gives 8 weights; their value is (nibble - 8) * scale[k / group, n].
// Columns are split into up to three stacked parts (linears sharing an input,
// runtime/fusion.py): part p's scales begin at `s_offp` with row stride `s_stridep`.
// With `has_offsets` (Q4_1-style groups, export/exact_q4.py) a weight is
// (nibble - 8) * scale + offset, the offsets laid out as the scales are (read by
// `offset_of`, composed: 0 without them); a group's offset times the sum of its inputs.
// K may not fill the last word (ExecuTorch pads K to a multiple of 8 with zeros): the
// input past K reads as 0, never out of its row.
// The input is read through `x_in` (one element) and `x4_in` (elements 4i .. 4i + 3),
// composed per kernel: vec4 loads where K % 8 == 0, else scalar ones.
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

fn scale_at(k: u32, col: u32) -> f32 {
  let sc = scale_col(col);
  return f32(scales[sc.x + (min(k, params.k - 1u) / params.group) * sc.y]);
}

fn offset_at(k: u32, col: u32) -> f32 {
  let sc = scale_col(col);
  return offset_of(sc.x + (min(k, params.k - 1u) / params.group) * sc.y);
}

// The 8 int4 weights of word `wi` of column `col` (nibble - 8), not yet scaled.
fn ints8(col: u32, wi: u32) -> W8 {
  let w = weight[col * params.words + wi];
  let a = vec4<f32>(f32(w & 15u), f32((w >> 4u) & 15u), f32((w >> 8u) & 15u),
                    f32((w >> 12u) & 15u)) - 8.0;
  let b = vec4<f32>(f32((w >> 16u) & 15u), f32((w >> 20u) & 15u), f32((w >> 24u) & 15u),
                    f32(w >> 28u)) - 8.0;
  return W8(a, b);
}

// The 8 weights of word `wi` of column `col`, dequantized (any group size).
fn weights8(col: u32, wi: u32) -> W8 {
  let q = ints8(col, wi);
  let k0 = 8u * wi;
  if (whole_groups) {  // the whole word is in one group
    let sc = scale_col(col);
    let at = sc.x + (k0 / params.group) * sc.y;
    let s = f32(scales[at]);
    let o = offset_of(at);
    return W8(q.a * s + o, q.b * s + o);
  }
  let sa = vec4<f32>(scale_at(k0, col), scale_at(k0 + 1u, col), scale_at(k0 + 2u, col),
                     scale_at(k0 + 3u, col));
  let sb = vec4<f32>(scale_at(k0 + 4u, col), scale_at(k0 + 5u, col), scale_at(k0 + 6u, col),
                     scale_at(k0 + 7u, col));
  if (has_offsets) {
    let oa = vec4<f32>(offset_at(k0, col), offset_at(k0 + 1u, col), offset_at(k0 + 2u, col),
                       offset_at(k0 + 3u, col));
    let ob = vec4<f32>(offset_at(k0 + 4u, col), offset_at(k0 + 5u, col),
                       offset_at(k0 + 6u, col), offset_at(k0 + 7u, col));
    return W8(q.a * sa + oa, q.b * sb + ob);
  }
  return W8(q.a * sa, q.b * sb);
}

// Where column `col`'s scales are: (first, stride between groups).
fn scale_col(col: u32) -> vec2<u32> {
  if (col < params.n0) {
    return vec2<u32>(col, params.s_stride0);
  }
  if (col < params.n1) {
    return vec2<u32>(params.s_off1 + col - params.n0, params.s_stride1);
  }
  return vec2<u32>(params.s_off2 + col - params.n1, params.s_stride2);
}

fn x_at(base: u32, k: u32) -> f32 {
  if (k < params.k) {
    return x_in(base + k);
  }
  return 0.0;
}

// Row `row`'s input elements of word `wi`, which lies inside K.
fn x8_inside(row: u32, wi: u32) -> W8 {
  let i4 = (row * params.k) / 4u + 2u * wi;
  return W8(x4_in(i4), x4_in(i4 + 1u));
}

// Row `row`'s input elements of word `wi` (0 past K).
fn x8(row: u32, wi: u32) -> W8 {
  let base = row * params.k;
  let k0 = 8u * wi;
  return W8(vec4<f32>(x_at(base, k0), x_at(base, k0 + 1u), x_at(base, k0 + 2u),
                      x_at(base, k0 + 3u)),
            vec4<f32>(x_at(base, k0 + 4u), x_at(base, k0 + 5u), x_at(base, k0 + 6u),
                      x_at(base, k0 + 7u)));
}

fn dot8(x: W8, w: W8) -> f32 {
  return dot(x.a, w.a) + dot(x.b, w.b);
}

fn sum8(x: W8) -> f32 {
  return dot(x.a + x.b, vec4<f32>(1.0));
}

fn bias_at(col: u32) -> f32 {
  if (params.has_bias == 1u) {
    return f32(bias[col]);
  }
  return 0.0;
}

// Rows row0 .. row0 + rows - 1 (components) times column `col`. `whole_groups` (the
// group a multiple of 8, hence K too: the common case): the lanes take groups g0,
// g0 + step, ..., each group's integer products summed, then scaled once, no load
// needing a bound check. Else word by word (words g0, g0 + step, ...), each weight
// scaled and the input past K masked.
fn col_dots(row0: u32, col: u32, g0: u32, step: u32) -> vec4<f32> {
  var s = vec4<f32>(0.0);
  if (whole_groups) {
    let per = params.group / 8u;
    let groups = params.k / params.group;
    let sc = scale_col(col);
    for (var g = g0; g < groups; g += step) {
      var a = vec4<f32>(0.0);
      var xs = vec4<f32>(0.0);  // the rows' input sums over the group (for offsets)
      for (var wi = g * per; wi < (g + 1u) * per; wi++) {
        let w = ints8(col, wi);
        let x0 = x8_inside(row0, wi);
        a.x += dot8(x0, w);
        if (has_offsets) { xs.x += sum8(x0); }
        if (rows > 1u) {
          let x1 = x8_inside(row0 + 1u, wi);
          a.y += dot8(x1, w);
          if (has_offsets) { xs.y += sum8(x1); }
        }
        if (rows > 2u) {
          let x2 = x8_inside(row0 + 2u, wi);
          a.z += dot8(x2, w);
          if (has_offsets) { xs.z += sum8(x2); }
        }
        if (rows > 3u) {
          let x3 = x8_inside(row0 + 3u, wi);
          a.w += dot8(x3, w);
          if (has_offsets) { xs.w += sum8(x3); }
        }
      }
      let at = sc.x + g * sc.y;
      s += a * f32(scales[at]);
      if (has_offsets) { s += xs * offset_of(at); }
    }
    return s;
  }
  for (var wi = g0; wi < params.words; wi += step) {
    let w = weights8(col, wi);
    s.x += dot8(x8(row0, wi), w);
    if (rows > 1u) { s.y += dot8(x8(row0 + 1u, wi), w); }
    if (rows > 2u) { s.z += dot8(x8(row0 + 2u, wi), w); }
    if (rows > 3u) { s.w += dot8(x8(row0 + 3u, wi), w); }
  }
  return s;
}

// --- dot: one output per invocation --------------------------------------------------
fn dot_item(i: u32) {
  let row = i / params.n;
  let col = i % params.n;
  put(row, col, col_dots(row, col, 0u, 1u).x + bias_at(col));
}

// --- gemv: workgroup g is column g % n of `rows` rows from rows (g / n) ---------------
// This lane's share of the workgroup's sums (components: the rows; rows past M repeat
// the last one, never written).
fn gemv_partial(g: u32, lane: u32) -> vec4<f32> {
  return col_dots(min((g / params.n) * rows, params.m - rows), g % params.n, lane, wg_size);
}

// The workgroup's total `t`, written by one lane.
fn gemv_write(g: u32, t: vec4<f32>) {
  let col = g % params.n;
  let row0 = (g / params.n) * rows;
  let shift = row0 - min(row0, params.m - rows);  // rows the clamp moved back
  let v = t + bias_at(col);
  for (var r = shift; r < rows; r++) {
    if (row0 + r - shift < params.m) {
      put(row0 + r - shift, col, v[r]);
    }
  }
}

// --- tiled: workgroup g is tile (g / tiles_n, g % tiles_n) of 32 x 32 -----------------
const TILE: u32 = 32u;
const TK: u32 = 32u;  // K per step: 4 words
// [k][row / 4] and [k][col / 4]: a lane's 4 rows and 4 columns at one k are one vec4 each
var<workgroup> x_tile: array<vec4<f32>, 256>;
var<workgroup> w_tile: array<vec4<f32>, 256>;

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
        v = x_in(row * params.k + k0 + kk);
      }
      x_tile[kk * 8u + r / 4u][r % 4u] = v;
    }
    // 32 columns x 4 words: 2 words per lane
    for (var e = lane; e < TILE * 4u; e += 64u) {
      let c = e / 4u;
      let wi = st * 4u + e % 4u;
      let at = (e % 4u) * 64u + c / 4u;  // k = 8 (e % 4) + b: at + 8 b
      var w = W8(vec4<f32>(0.0), vec4<f32>(0.0));
      if (c0 + c < params.n && wi < params.words) {
        w = weights8(c0 + c, wi);
      }
      let i = c % 4u;
      w_tile[at][i] = w.a.x;
      w_tile[at + 8u][i] = w.a.y;
      w_tile[at + 16u][i] = w.a.z;
      w_tile[at + 24u][i] = w.a.w;
      w_tile[at + 32u][i] = w.b.x;
      w_tile[at + 40u][i] = w.b.y;
      w_tile[at + 48u][i] = w.b.z;
      w_tile[at + 56u][i] = w.b.w;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      let wv = w_tile[kk * 8u + tx];
      let xv = x_tile[kk * 8u + ty];
      acc0 += xv.x * wv;
      acc1 += xv.y * wv;
      acc2 += xv.z * wv;
      acc3 += xv.w * wv;
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
