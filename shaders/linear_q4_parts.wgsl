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
// ==== consts  per kernel: input rows per gemv workgroup (naga 29 panics on an override there); whether groups are whole words (group % 8 == 0: the other path compiled out, which lavapipe runs 3x faster); whether the groups have offsets
const rows: u32 = ${rows}u;
const whole_groups: bool = ${whole};
const has_offsets: bool = ${offsets};
// ==== offsets_bound  the groups' offsets, laid out as the scales (binding 8)
fn offset_of(i: u32) -> f32 {
  return offsets[i];
}
// ==== offsets_none  no offsets: symmetric groups
fn offset_of(i: u32) -> f32 {
  return 0.0;
}
// ==== x_vec4  the input bound as vec4s (K % 8 == 0: every row starts on a vec4)
fn x_in(i: u32) -> f32 {
  return f32(input4[i / 4u][i % 4u]);
}

fn x4_in(i4: u32) -> vec4<f32> {
  return vec4<f32>(input4[i4]);
}
// ==== x_scalar  the input bound as elements (any K)
fn x_in(i: u32) -> f32 {
  return f32(input[i]);
}

fn x4_in(i4: u32) -> vec4<f32> {
  let i = 4u * i4;
  return vec4<f32>(f32(input[i]), f32(input[i + 1u]), f32(input[i + 2u]), f32(input[i + 3u]));
}
// ==== wide  decode with 16-byte loads: column groups of `span` lanes, `cols` columns each
// One row (decode). A workgroup of wg_size lanes is wg_size / span column groups; group j
// covers columns col0 .. col0 + cols - 1. Lane `sub` of a group sweeps chunks sub,
// sub + span, ... two at a time (two loads in flight): one vec4<u32> load is 32 weights
// (4 words), beside 8 vec4 loads of the input that the group's columns share. Nibbles
// become floats by their bits (0x4B000000 | n is 2^23 + n), not by an integer conversion,
// which NVIDIA GPUs run at a fraction of the float rate. Needs K a multiple of 32 (rows of
// whole chunks, no padding) and the group a multiple of 8 (one scale per word). The
// group's lanes sum by subgroupShuffleXor butterflies when one subgroup spans the
// workgroup, else in workgroup memory.
override span: u32 = 8u;  // lanes per column group (a power of two <= wg_size)
override cols: u32 = 2u;  // adjacent columns per column group (1 .. 4)
var<workgroup> wide_part: array<vec4<f32>, 32>;  // one per lane (wg_size <= 32)

const MAGIC: u32 = 0x4B000000u;  // the bits of 2^23
const MAGIC_PLUS_8: f32 = 8388616.0;  // 2^23 + 8: takes the stored + 8 off too

fn nibbles4(w: vec4<u32>) -> vec4<f32> {
  return bitcast<vec4<f32>>((w & vec4<u32>(15u)) | vec4<u32>(MAGIC)) - MAGIC_PLUS_8;
}

// Word w's 8 weights (k, k + 1, ...) times inputs xa (k .. k + 3) and xb (k + 4 .. k + 7).
fn word_dot(w: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
  let lo = nibbles4(vec4<u32>(w, w >> 4u, w >> 8u, w >> 12u));
  let hi = nibbles4(vec4<u32>(w >> 16u, w >> 20u, w >> 24u, w >> 28u));
  return dot(lo, xa) + dot(hi, xb);
}

// The scales of chunk `c`'s four words of column `col`. This form's scales are laid out
// [N, groups] (ops/linear_q4.py column_scales): a column's groups side by side, so the
// lanes of a column group read neighbouring scales.
fn chunk_scales(col: u32, c: u32) -> vec4<f32> {
  let row = col * (params.k / params.group);
  let k0 = 32u * c;
  if (params.group % 32u == 0u) {
    return vec4<f32>(f32(scales[row + k0 / params.group]));
  }
  return vec4<f32>(f32(scales[row + k0 / params.group]),
                   f32(scales[row + (k0 + 8u) / params.group]),
                   f32(scales[row + (k0 + 16u) / params.group]),
                   f32(scales[row + (k0 + 24u) / params.group]));
}

struct X32 {
  x0: vec4<f32>, x1: vec4<f32>, x2: vec4<f32>, x3: vec4<f32>,
  x4: vec4<f32>, x5: vec4<f32>, x6: vec4<f32>, x7: vec4<f32>,
}

fn chunk_input(c: u32) -> X32 {
  let b = 8u * c;
  return X32(vec4<f32>(input4[b]), vec4<f32>(input4[b + 1u]), vec4<f32>(input4[b + 2u]),
             vec4<f32>(input4[b + 3u]), vec4<f32>(input4[b + 4u]), vec4<f32>(input4[b + 5u]),
             vec4<f32>(input4[b + 6u]), vec4<f32>(input4[b + 7u]));
}

// The offsets of chunk `c`'s four words of column `col`, relaid by column as the scales.
fn chunk_offsets(col: u32, c: u32) -> vec4<f32> {
  let row = col * (params.k / params.group);
  let k0 = 32u * c;
  if (params.group % 32u == 0u) {
    return vec4<f32>(offset_of(row + k0 / params.group));
  }
  return vec4<f32>(offset_of(row + k0 / params.group), offset_of(row + (k0 + 8u) / params.group),
                   offset_of(row + (k0 + 16u) / params.group),
                   offset_of(row + (k0 + 24u) / params.group));
}

// The input sums of the chunk's four words (what their offsets multiply).
fn chunk_sums(x: X32) -> vec4<f32> {
  let one = vec4<f32>(1.0);
  return vec4<f32>(dot(x.x0 + x.x1, one), dot(x.x2 + x.x3, one), dot(x.x4 + x.x5, one),
                   dot(x.x6 + x.x7, one));
}

// Column `col`'s chunk `c` times its 32 inputs (`sums`: chunk_sums, with offsets).
fn chunk_dot(col: u32, c: u32, x: X32, sums: vec4<f32>) -> f32 {
  let w = weight16[col * (params.words / 4u) + c];
  let d = vec4<f32>(word_dot(w.x, x.x0, x.x1), word_dot(w.y, x.x2, x.x3),
                    word_dot(w.z, x.x4, x.x5), word_dot(w.w, x.x6, x.x7));
  if (has_offsets) {
    return dot(d, chunk_scales(col, c)) + dot(sums, chunk_offsets(col, c));
  }
  return dot(d, chunk_scales(col, c));
}

// Columns col0 .. col0 + cols - 1 (those past N read the last column; never written).
fn chunk_dots4(col0: u32, c: u32, x: X32) -> vec4<f32> {
  let last = params.n - 1u;
  var sums = vec4<f32>(0.0);
  if (has_offsets) { sums = chunk_sums(x); }
  var d = vec4<f32>(chunk_dot(min(col0, last), c, x, sums), 0.0, 0.0, 0.0);
  if (cols > 1u) { d.y = chunk_dot(min(col0 + 1u, last), c, x, sums); }
  if (cols > 2u) { d.z = chunk_dot(min(col0 + 2u, last), c, x, sums); }
  if (cols > 3u) { d.w = chunk_dot(min(col0 + 3u, last), c, x, sums); }
  return d;
}

fn wide_item(g: u32, lane: u32, sg_size: u32, sg_lane: u32) {
  let one_subgroup = sg_size == wg_size;
  let me = select(lane, sg_lane, one_subgroup);
  let sub = me % span;
  let col0 = (g * (wg_size / span) + me / span) * cols;
  let chunks = params.words / 4u;
  var s = vec4<f32>(0.0);  // components: the group's columns
  var c = sub;
  for (; c + span < chunks; c += 2u * span) {
    let xa = chunk_input(c);
    let xb = chunk_input(c + span);
    s += chunk_dots4(col0, c, xa) + chunk_dots4(col0, c + span, xb);
  }
  if (c < chunks) {
    s += chunk_dots4(col0, c, chunk_input(c));
  }
  if (one_subgroup) {
    for (var m = span / 2u; m > 0u; m /= 2u) {
      s += subgroupShuffleXor(s, m);
    }
  } else {
    wide_part[lane] = s;
    workgroupBarrier();
    if (sub == 0u) {
      for (var i = 1u; i < span; i++) {
        s += wide_part[lane + i];
      }
    }
  }
  if (sub != 0u) {
    return;
  }
  for (var j = 0u; j < cols; j++) {
    let col = col0 + j;
    if (col < params.n) {
      put(0u, col, s[j] + bias_at(col));
    }
  }
}
