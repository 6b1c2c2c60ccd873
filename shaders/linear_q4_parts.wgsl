// The lane sums of shaders/linear_q4.wgsl's gemv form, one composed per kernel
// (ops/linear_q4.py): a halving tree in workgroup memory, or subgroupAdd where the
// adapter has subgroups (a module that names subgroupAdd does not compile without them).
// ==== sum_tree  gemv without subgroups: the lanes' sums meet in a halving tree
var<workgroup> part: array<vec4<f32>, wg_size>;

fn gemv_item(g: u32, lane: u32) {
  part[lane] = gemv_partial(g, lane);
  workgroupBarrier();
  for (var stride = wg_size / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      part[lane] += part[lane + stride];
    }
    workgroupBarrier();
  }
  if (lane == 0u) {
    gemv_write(g, part[0]);
  }
}
// ==== sum_subgroups  gemv with subgroups: subgroupAdd, no barrier when one subgroup spans the workgroup
var<workgroup> part: array<vec4<f32>, wg_size>;

fn gemv_item_sg(g: u32, lane: u32, sg_size: u32, sg_lane: u32) {
  let t = subgroupAdd(gemv_partial(g, lane));
  if (sg_size >= wg_size) {
    if (lane == 0u) {
      gemv_write(g, t);
    }
    return;
  }
  // several subgroups: each one's first lane posts its total, the others zeros
  part[lane] = select(vec4<f32>(0.0), t, sg_lane == 0u);
  workgroupBarrier();
  for (var stride = wg_size / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      part[lane] += part[lane + stride];
    }
    workgroupBarrier();
  }
  if (lane == 0u) {
    gemv_write(g, part[0]);
  }
}
// ==== wide  decode with 16-byte loads: column groups of `span` lanes, `cols` columns each
// A workgroup of wg_size lanes is wg_size / span column groups; group j covers columns
// col0 .. col0 + cols - 1 of up to 4 rows. Lane `sub` of a group sweeps chunks sub,
// sub + span, ... of its columns: one vec4<u32> load is 32 weights (4 words), beside 8
// vec4 loads of the input that all `cols` columns share. Needs K a multiple of 32 (rows of
// whole chunks, no padding) and the group a multiple of 8 (one scale per word). The
// group's lanes sum by subgroupShuffleXor butterflies when one subgroup spans the
// workgroup, else in workgroup memory.
override span: u32 = 8u;  // lanes per column group (a power of two <= wg_size)
override cols: u32 = 2u;  // adjacent columns per column group (1 .. 4)
var<workgroup> wide_part: array<vec4<f32>, 128>;  // 4 rows x wg_size (<= 32) lanes

fn nibbles_lo(w: u32) -> vec4<f32> {
  return vec4<f32>(f32(w & 15u), f32((w >> 4u) & 15u), f32((w >> 8u) & 15u),
                   f32((w >> 12u) & 15u)) - 8.0;
}

fn nibbles_hi(w: u32) -> vec4<f32> {
  return vec4<f32>(f32((w >> 16u) & 15u), f32((w >> 20u) & 15u), f32((w >> 24u) & 15u),
                   f32(w >> 28u)) - 8.0;
}

// The scales of chunk `c`'s four words of column `col`.
fn chunk_scales(col: u32, c: u32) -> vec4<f32> {
  let k0 = 32u * c;
  if (params.group % 32u == 0u) {
    return vec4<f32>(f32(scales[scale_index(k0 / params.group, col)]));
  }
  return vec4<f32>(f32(scales[scale_index(k0 / params.group, col)]),
                   f32(scales[scale_index((k0 + 8u) / params.group, col)]),
                   f32(scales[scale_index((k0 + 16u) / params.group, col)]),
                   f32(scales[scale_index((k0 + 24u) / params.group, col)]));
}

// Chunk w (32 weights) times its 32 inputs x0 .. x7, word by word.
fn chunk_dots(w: vec4<u32>, x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>,
              x4: vec4<f32>, x5: vec4<f32>, x6: vec4<f32>, x7: vec4<f32>) -> vec4<f32> {
  return vec4<f32>(dot(nibbles_lo(w.x), x0) + dot(nibbles_hi(w.x), x1),
                   dot(nibbles_lo(w.y), x2) + dot(nibbles_hi(w.y), x3),
                   dot(nibbles_lo(w.z), x4) + dot(nibbles_hi(w.z), x5),
                   dot(nibbles_lo(w.w), x6) + dot(nibbles_hi(w.w), x7));
}

fn wide_item(g: u32, lane: u32, sg_size: u32, sg_lane: u32) {
  let one_subgroup = sg_size == wg_size;
  let me = select(lane, sg_lane, one_subgroup);
  let sub = me % span;
  let col0 = ((g % params.tiles_n) * (wg_size / span) + me / span) * cols;
  let row0 = (g / params.tiles_n) * 4u;
  let rows = min(4u, params.m - row0);
  let chunks = params.words / 4u;
  let row_len = params.k / 4u;  // input vec4s per row
  var s = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  for (var c = sub; c < chunks; c += span) {
    var w = array<vec4<u32>, 4>(vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u), vec4<u32>(0u));
    var sc = array<vec4<f32>, 4>(vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
    for (var j = 0u; j < cols; j++) {
      let col = min(col0 + j, params.n - 1u);  // past N: a real column, never written
      w[j] = weight16[col * chunks + c];
      sc[j] = chunk_scales(col, c);
    }
    for (var r = 0u; r < rows; r++) {
      let xb = (row0 + r) * row_len + 8u * c;
      let x0 = vec4<f32>(input4[xb]);
      let x1 = vec4<f32>(input4[xb + 1u]);
      let x2 = vec4<f32>(input4[xb + 2u]);
      let x3 = vec4<f32>(input4[xb + 3u]);
      let x4 = vec4<f32>(input4[xb + 4u]);
      let x5 = vec4<f32>(input4[xb + 5u]);
      let x6 = vec4<f32>(input4[xb + 6u]);
      let x7 = vec4<f32>(input4[xb + 7u]);
      var d = vec4<f32>(0.0);
      for (var j = 0u; j < cols; j++) {
        d[j] = dot(chunk_dots(w[j], x0, x1, x2, x3, x4, x5, x6, x7), sc[j]);
      }
      s[r] += d;
    }
  }
  if (one_subgroup) {
    for (var m = span / 2u; m > 0u; m /= 2u) {
      s[0] += subgroupShuffleXor(s[0], m);
      s[1] += subgroupShuffleXor(s[1], m);
      s[2] += subgroupShuffleXor(s[2], m);
      s[3] += subgroupShuffleXor(s[3], m);
    }
  } else {
    for (var r = 0u; r < 4u; r++) {
      wide_part[r * wg_size + lane] = s[r];
    }
    workgroupBarrier();
    if (sub == 0u) {
      for (var r = 0u; r < 4u; r++) {
        var t = vec4<f32>(0.0);
        for (var i = 0u; i < span; i++) {
          t += wide_part[r * wg_size + lane + i];
        }
        s[r] = t;
      }
    }
  }
  if (sub != 0u) {
    return;
  }
  for (var r = 0u; r < rows; r++) {
    for (var j = 0u; j < cols; j++) {
      let col = col0 + j;
      if (col < params.n) {
        put(row0 + r, col, s[r][j] + bias_at(col));
      }
    }
  }
}
