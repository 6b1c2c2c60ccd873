// out[m, n] = sum_k input[m, k] * weight[n, k] (+ bias[n]): nn.Linear with the
// weight as stored, [N, K]. Each workgroup of tw x tw invocations computes one
// (4 tw) x (4 tw) output tile, each invocation a 4 x 4 block (rows lid.y + i tw,
// columns lid.x + j tw), staging K in steps of TK through workgroup memory.
// Loads past M, N or K read as zero, so any sizes work. Tiles are numbered
// row-major over a grid that may be folded into two dimensions.
// Prelude (Params, bindings, `put`: where output (row, col) goes): shaders/compose.py
// from ops/matmul.py.

override tw: u32 = 8;  // <= 8

const TK = 16u;
const MAX_TILE = 32u;

var<workgroup> a_tile: array<f32, MAX_TILE * TK>;  // [tile rows of input][TK]
var<workgroup> w_tile: array<f32, MAX_TILE * TK>;  // [tile rows of weight][TK]

@compute @workgroup_size(tw, tw)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let flat = group_index(wid, groups);
  if (flat >= params.tiles) {
    return;  // uniform for the whole workgroup
  }
  let tile = 4u * tw;
  let m0 = (flat / params.tiles_n) * tile;
  let n0 = (flat % params.tiles_n) * tile;
  var acc: array<f32, 16>;
  for (var k0 = 0u; k0 < params.k; k0 += TK) {
    for (var idx = li; idx < tile * TK; idx += tw * tw) {
      let r = idx / TK;
      let kk = k0 + idx % TK;
      var a = 0.0;
      if (m0 + r < params.m && kk < params.k) {
        a = f32(input[(m0 + r) * params.k + kk]);
      }
      a_tile[idx] = a;
      var w = 0.0;
      if (n0 + r < params.n && kk < params.k) {
        w = f32(weight[(n0 + r) * params.k + kk]);
      }
      w_tile[idx] = w;
    }
    workgroupBarrier();
    for (var c = 0u; c < TK; c++) {
      var a: array<f32, 4>;
      var w: array<f32, 4>;
      for (var i = 0u; i < 4u; i++) {
        a[i] = a_tile[(lid.y + i * tw) * TK + c];
        w[i] = w_tile[(lid.x + i * tw) * TK + c];
      }
      for (var i = 0u; i < 4u; i++) {
        for (var j = 0u; j < 4u; j++) {
          acc[i * 4u + j] += a[i] * w[j];
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let row = m0 + lid.y + i * tw;
    for (var j = 0u; j < 4u; j++) {
      let col = n0 + lid.x + j * tw;
      if (row < params.m && col < params.n) {
        var v = acc[i * 4u + j];
        if (params.has_bias == 1u) {
          v += f32(bias[col]);
        }
        put(row, col, v);
      }
    }
  }
}

// The "dot" form: one output element per invocation, a plain dot product over K with
// four partial sums, no workgroup memory and no barrier. On CPU adapters (SwiftShader,
// lavapipe) barriers cost more than the reuse the tiles buy (ops/matmul.py chooses).
override wg_size: u32 = 64;

// Entry point dot (generated): dot_item(i) for each of the m * n outputs.
fn dot_item(i: u32) {
  let col = i % params.n;
  let a = (i / params.n) * params.k;
  let w = col * params.k;
  var s = vec4<f32>(0.0);
  var kk = 0u;
  for (; kk + 4u <= params.k; kk += 4u) {
    s += vec4<f32>(f32(input[a + kk]), f32(input[a + kk + 1u]), f32(input[a + kk + 2u]),
                   f32(input[a + kk + 3u])) *
         vec4<f32>(f32(weight[w + kk]), f32(weight[w + kk + 1u]), f32(weight[w + kk + 2u]),
                   f32(weight[w + kk + 3u]));
  }
  for (; kk < params.k; kk++) {
    s.x += f32(input[a + kk]) * f32(weight[w + kk]);
  }
  var v = (s.x + s.y) + (s.z + s.w);
  if (params.has_bias == 1u) {
    v += f32(bias[col]);
  }
  put(i / params.n, col, v);
}
