// Implicit-GEMM convolution (ops/conv.py), the matmul family's mm4 tiles
// (matmul_tile8.wgsl) over out channels x output pixels of one batch item and group:
// M = Cout/groups rows, N = OH*OW columns, K = Cin/groups * kh * kw in the order
// (ci, ky, kx), which is the weight's own layout, so weights are [M, K] rows read along K
// (stage_w_scalar, or stage_w_vec4 when K % 4 == 0; chosen by the generated `stage_w`).
// The patch operand is gathered from the NCHW input: each lane stages one pixel column
// of the tile (tile = 8 tw columns, tw * tw lanes: tw a multiple of 8), consecutive
// lanes on consecutive pixels (contiguous input for stride 1), taps in the padding zero;
// `taps[k]` (made at load) holds k's input offset and (dy ky, dx kx), so no division.
// Split K (params.splits > 1, few tiles): split s sums K range s, the generated `put`
// stores raw partial sums into `part` and conv.wgsl's split_item adds them up.
// Each invocation keeps an 8 x 8 block in registers (rows ty*4 + {0..3} and 4 tw + ty*4 +
// {0..3}, likewise columns). Bias and clamp in the store. Prelude: shaders/compose.py.

override tw: u32 = 16;  // invocations per side: tiles of 8 tw
override tk: u32 = 8;   // K per step, a multiple of 4

var<workgroup> a_s: array<vec4<f32>, 2u * tw * tk>;  // [tk][tile / 4] of weight rows
var<workgroup> w_s: array<vec4<f32>, 2u * tw * tk>;  // [tk][tile / 4] of patch columns (fma_step's name)

fn put_a(r: u32, c: u32, v: f32) {
  a_s[c * 2u * tw + r / 4u][r % 4u] = v;
}

fn stage_w_scalar(wb: u32, m0: u32, k0: u32, k_end: u32, li: u32) {
  for (var idx = li; idx < 8u * tw * tk; idx += tw * tw) {
    let r = idx / tk;
    let c = idx % tk;
    var a = 0.0;
    if (m0 + r < params.cout_g && k0 + c < k_end) {
      a = f32(weight[wb + (m0 + r) * params.k + k0 + c]);
    }
    put_a(r, c, a);
  }
}

fn stage_w_vec4(wb: u32, m0: u32, k0: u32, k_end: u32, li: u32) {
  let per_row = tk / 4u;
  for (var idx = li; idx < 8u * tw * per_row; idx += tw * tw) {
    let r = idx / per_row;
    let c = (idx % per_row) * 4u;
    var a = vec4<f32>(0.0);
    if (m0 + r < params.cout_g && k0 + c < k_end) {
      a = vec4<f32>(weight4[(wb + (m0 + r) * params.k + k0 + c) / 4u]);
    }
    put_a(r, c, a.x);
    put_a(r, c + 1u, a.y);
    put_a(r, c + 2u, a.z);
    put_a(r, c + 3u, a.w);
  }
}

// This lane's pixel column of the tile: where its window starts, -1 rows past the end.
struct Pixel {
  col: u32,
  iy0: i32,
  ix0: i32,
}

fn pixel(n0: u32, li: u32) -> Pixel {
  let col = li % (8u * tw);
  let p = n0 + col;
  let oy = p / params.ow;
  let ox = p % params.ow;
  let iy0 = select(-1000000, i32(oy * params.sy) - i32(params.py), p < params.oh * params.ow);
  return Pixel(col, iy0, i32(ox * params.sx) - i32(params.px));
}

fn stage_p(base: i32, px: Pixel, k0: u32, k_end: u32, li: u32) {
  for (var kk = li / (8u * tw); kk < tk; kk += tw / 8u) {
    let k = k0 + kk;
    var v = 0.0;
    if (k < k_end) {
      let t = taps[k];
      let iy = px.iy0 + t.y;
      let ix = px.ix0 + t.z;
      if (iy >= 0 && iy < i32(params.h) && ix >= 0 && ix < i32(params.w)) {
        v = f32(x[u32(base + t.x)]);
      }
    }
    w_s[kk * 2u * tw + px.col / 4u][px.col % 4u] = v;
  }
}

@compute @workgroup_size(tw, tw)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let flat = wid.x + wid.y * groups.x;  // tiles on a grid folded into 2-D
  if (flat >= params.tiles * params.splits * params.batch * params.groups) {
    return;  // uniform for the whole workgroup
  }
  let tile = 8u * tw;
  let t = flat % params.tiles;
  let split = (flat / params.tiles) % params.splits;
  let item = flat / params.tiles / params.splits;  // batch item * groups + group
  let b = item / params.groups;
  let g = item % params.groups;
  let m0 = (t / params.tiles_n) * tile;
  let n0 = (t % params.tiles_n) * tile;
  let wb = g * params.cout_g * params.k;
  let xb = (b * params.cin + g * params.cin_g) * params.h * params.w;
  let px = pixel(n0, li);
  let base = i32(xb) + px.iy0 * i32(params.w) + px.ix0;
  let k_end = min(params.k, (split + 1u) * params.k_span);
  var acc: array<vec4<f32>, 16>;  // as matmul_tile8.wgsl: constant indices only
  for (var k0 = split * params.k_span; k0 < k_end; k0 += tk) {
    stage_w(wb, m0, k0, k_end, li);
    stage_p(base, px, k0, k_end, li);
    workgroupBarrier();
    fma_step(&acc, lid);
    workgroupBarrier();
  }
  let ob = (b * params.cout + g * params.cout_g) * params.oh * params.ow;
  let s = split * params.numel;  // where this split's partial sums go (split K)
  let r_lo = m0 + lid.y * 4u;
  let r_hi = r_lo + 4u * tw;
  let c_lo = n0 + lid.x * 4u;
  let c_hi = c_lo + 4u * tw;
  store_row(ob, s, g * params.cout_g, r_lo, c_lo, c_hi, acc[0], acc[1]);
  store_row(ob, s, g * params.cout_g, r_lo + 1u, c_lo, c_hi, acc[2], acc[3]);
  store_row(ob, s, g * params.cout_g, r_lo + 2u, c_lo, c_hi, acc[4], acc[5]);
  store_row(ob, s, g * params.cout_g, r_lo + 3u, c_lo, c_hi, acc[6], acc[7]);
  store_row(ob, s, g * params.cout_g, r_hi, c_lo, c_hi, acc[8], acc[9]);
  store_row(ob, s, g * params.cout_g, r_hi + 1u, c_lo, c_hi, acc[10], acc[11]);
  store_row(ob, s, g * params.cout_g, r_hi + 2u, c_lo, c_hi, acc[12], acc[13]);
  store_row(ob, s, g * params.cout_g, r_hi + 3u, c_lo, c_hi, acc[14], acc[15]);
}

// Pixels c_lo..+3 and c_hi..+3 of out channel `row` of the group, through `put`.
fn store_row(ob: u32, s: u32, c0: u32, row: u32, c_lo: u32, c_hi: u32, lo: vec4<f32>,
             hi: vec4<f32>) {
  if (row >= params.cout_g) {
    return;
  }
  let base = ob + row * params.oh * params.ow;
  store4(base, s, c0 + row, c_lo, lo);
  store4(base, s, c0 + row, c_hi, hi);
}

fn store4(base: u32, s: u32, co: u32, col: u32, v: vec4<f32>) {
  let n = params.oh * params.ow;
  if (col < n) { put(base + col, s, co, v.x); }
  if (col + 1u < n) { put(base + col + 1u, s, co, v.y); }
  if (col + 2u < n) { put(base + col + 2u, s, co, v.z); }
  if (col + 3u < n) { put(base + col + 3u, s, co, v.w); }
}
