// The lane sums of shaders/linear_q4.wgsl's gemv form, one composed per kernel
// (ops/linear_q4.py): a halving tree in workgroup memory, or subgroupAdd where the
// adapter has subgroups (a module that names subgroupAdd does not compile without them).
// ==== sum_part_tree  both gemv sums: `part`'s lanes added in a halving tree, lane 0 writes the total
var<workgroup> part: array<vec4<f32>, wg_size>;

fn part_tree_write(g: u32, lane: u32) {
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
// ==== sum_tree  gemv without subgroups: the lanes' sums meet in the halving tree
fn gemv_item(g: u32, lane: u32) {
  part[lane] = gemv_partial(g, lane);
  part_tree_write(g, lane);
}
// ==== sum_subgroups  gemv with subgroups: subgroupAdd, no barrier when one subgroup spans the workgroup
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
  part_tree_write(g, lane);
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
// ==== row_plain  the wide and keep forms read their one row as it is
fn row_in4(j: u32) -> vec4<f32> {
  return vec4<f32>(input4[j]);
}

fn norm_prologue(lane: u32, sg_size: u32) {}
// ==== row_norm  the wide and keep forms with an RMSNorm prologue (pte_webgpu.norm_linear_q4gsw)
// The row is the norm's input: each workgroup first sums its squares (f32, the lanes'
// parts by subgroupAdd where one subgroup is the workgroup, else a halving tree), finds
// its scale (a rare row rescaled by 2^k as et_vk.rms_norm does: snippets.wgsl rare_row4),
// then every load normalises, elem(x 2^k rstd w), rounded as the norm's output tensor
// would be: the norm's own dispatch and its output's round trip are gone. One extra pass
// over a row of K floats per workgroup, from cache.
var<private> norm_rstd: f32;
var<private> norm_k: i32;  // 2^k scales x on a rare row (0 otherwise)
var<workgroup> norm_part: array<f32, wg_size>;

fn row_in4(j: u32) -> vec4<f32> {
  var v = vec4<f32>(input4[j]);
  if (norm_k != 0) {
    v = scale4(v, norm_k);
  }
  return vec4<f32>(vec4<elem>(v * norm_rstd * vec4<f32>(gamma4[j])));
}

fn norm_prologue(lane: u32, sg_size: u32) {
  let k4 = params.k / 4u;
  var ss = 0.0;
  for (var j = lane; j < k4; j += wg_size) {
    let v = vec4<f32>(input4[j]);
    ss += dot(v, v);
  }
  var total = 0.0;
  if (sg_size >= wg_size) {
    total = subgroupAdd(ss);
  } else {
    norm_part[lane] = ss;
    workgroupBarrier();
    for (var stride = wg_size / 2u; stride > 0u; stride /= 2u) {
      if (lane < stride) {
        norm_part[lane] += norm_part[lane + stride];
      }
      workgroupBarrier();
    }
    total = norm_part[0];
  }
  let width = f32(params.k);
  norm_k = 0;
  norm_rstd = inverseSqrt(total / width + params.eps);
  if (norm_row_is_rare(total, width, params.eps)) {  // every lane redoes it alike
    let r = rare_row4_scale(0u, k4, total, width, params.eps);
    norm_k = i32(r.x);
    norm_rstd = r.y;
  }
}
// ==== row_gated  the wide and keep forms with a gated-input prologue (pte_webgpu.gated_linear_q4gsw)
// The row is an element-wise chain of two tensors (SwiGLU: silu(gate) * up), computed with
// the chain's own steps and roundings (ops/fused_elementwise.py chain_value) as each vec4
// is loaded: the chain's dispatch and its output's round trip are gone.
fn row_in4(j: u32) -> vec4<f32> {
  let g = vec4<f32>(input4[j]);
  let u = vec4<f32>(up4[j]);
  return vec4<f32>(chain_value(g.x, u.x), chain_value(g.y, u.y), chain_value(g.z, u.z),
                   chain_value(g.w, u.w));
}

fn norm_prologue(lane: u32, sg_size: u32) {}
// ==== row_merge  the wide and keep forms with the split attention's merge as their prologue (ops/attention_merge.py)
// The row is a decode step's attention output left as parts: each workgroup first puts
// the parts' factors and the heads' sums in workgroup memory (snippets.wgsl
// attention_merge), then merges each vec4 as it is loaded, with the steps and roundings
// of the merge's own kernel: its dispatch and its output's round trip are gone.
fn row_in4(j: u32) -> vec4<f32> {
  return merged4(j);
}

fn norm_prologue(lane: u32, sg_size: u32) {
  set_merge(lane);
}
// ==== x_gated  the gemv forms' input as a gated chain of two tensors (pte_webgpu.gated_linear_q4gsw; K % 8 == 0)
// Each element is the chain's value of input and up (SwiGLU), with the chain's own steps
// and roundings, computed as it is loaded (every workgroup redoes its row's).
fn x_in(i: u32) -> f32 {
  return chain_value(f32(input4[i / 4u][i % 4u]), f32(up4[i / 4u][i % 4u]));
}

fn x4_in(i4: u32) -> vec4<f32> {
  let g = vec4<f32>(input4[i4]);
  let u = vec4<f32>(up4[i4]);
  return vec4<f32>(chain_value(g.x, u.x), chain_value(g.y, u.y), chain_value(g.z, u.z),
                   chain_value(g.w, u.w));
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
  return X32(row_in4(b), row_in4(b + 1u), row_in4(b + 2u), row_in4(b + 3u), row_in4(b + 4u),
             row_in4(b + 5u), row_in4(b + 6u), row_in4(b + 7u));
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
  return chunk_scaled(col, c, d, sums);
}

// The chunk's four word products `d` scaled (and offset) into column `col`'s sum.
fn chunk_scaled(col: u32, c: u32, d: vec4<f32>, sums: vec4<f32>) -> f32 {
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
  norm_prologue(lane, sg_size);
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
// ==== mantissa  nibbles masked in place into the mantissa of 1.0 (the keep and cols forms)
// 1 + n 2^(4i - 23) less 1 + 8 2^(4i - 23) is (n - 8) 2^(4i - 23) exactly, times an input
// held scaled by 2^(23 - 4i): per weight one mask, one or, one subtract and one
// multiply-add, no shift (one per 8 weights) and no integer conversion.
const KEEP_ONE: u32 = 0x3F800000u;  // the bits of 1.0
const KEEP_MASK = vec4<u32>(0xFu, 0xF0u, 0xF00u, 0xF000u);
// 1 + 8 2^(4i - 23): the bits of 1.0 with 8 in nibble i
const KEEP_BIAS = vec4<f32>(1.00000095367431640625, 1.0000152587890625, 1.000244140625,
                            1.00390625);
const KEEP_SCALE = vec4<f32>(8388608.0, 524288.0, 32768.0, 2048.0);  // 2^(23 - 4i)

// Word w's 8 weights times inputs xa, xb held scaled by KEEP_SCALE.
fn keep_word(w: u32, xa: vec4<f32>, xb: vec4<f32>) -> f32 {
  let lo = bitcast<vec4<f32>>((vec4<u32>(w) & KEEP_MASK) | vec4<u32>(KEEP_ONE)) - KEEP_BIAS;
  let hi = bitcast<vec4<f32>>((vec4<u32>(w >> 16u) & KEEP_MASK) | vec4<u32>(KEEP_ONE))
    - KEEP_BIAS;
  return dot(lo, xa) + dot(hi, xb);
}
// ==== keep  decode with the input held in registers: a column's K split over `keep_lanes` lanes
// One row (decode). Lane kl of a column group (kl = lane % keep_lanes) loads its chunks
// kl, kl + keep_lanes, ... (keep_reps of them, 32 inputs each) once, then sweeps
// keep_cols columns, keep_batch at once (their loads in flight together): per column and
// chunk one 16-byte weight load and a scale, no input load. Nibbles are masked where they
// lie (bits 4i .. 4i + 3 of each half word) into the mantissa of 1.0: 1 + n 2^(4i - 23),
// less 1 + 8 2^(4i - 23), is (n - 8) 2^(4i - 23) exactly, times the input held scaled by
// 2^(23 - 4i): one mask, one subtract and one multiply-add per weight, no shift. A group
// of up to 32 lanes sums four columns by a transposed butterfly (each step halves the
// values a lane keeps); keep_lanes > 32 spans several subgroups, whose sums meet once in
// workgroup memory after the sweep. Where a subgroup is narrower than the group, the sums
// meet in workgroup memory after each four columns.
override keep_lanes: u32 = 32u;  // lanes per column (a power of two, 4 .. 256)
override keep_cols: u32 = 32u;  // columns per workgroup (a multiple of keep_batch groups)
override keep_batch: u32 = 4u;  // columns a lane sweeps at once (4 or 8)
override keep_reps: u32 = 1u;  // chunks per lane: ceil(K / 32 / keep_lanes), 1 .. 4
override keep_parts: u32 = 1u;  // (keep_lanes / 32) keep_cols: the subgroups' sums
var<workgroup> keep_red: array<vec4<f32>, wg_size>;
var<workgroup> keep_part: array<f32, keep_parts>;

// Chunk c's inputs scaled by KEEP_SCALE (zeros past the row's last chunk).
fn keep_input(c: u32) -> X32 {
  if (c >= params.words / 4u) {
    return X32();
  }
  let x = chunk_input(c);
  let f = KEEP_SCALE;
  return X32(x.x0 * f, x.x1 * f, x.x2 * f, x.x3 * f, x.x4 * f, x.x5 * f, x.x6 * f, x.x7 * f);
}

// The input sums of chunk c's four words (zeros past the row).
fn keep_sums(c: u32) -> vec4<f32> {
  if (!has_offsets || c >= params.words / 4u) {
    return vec4<f32>(0.0);
  }
  return chunk_sums(chunk_input(c));
}

// Column `col`'s chunk `c` (clamped into the row: its inputs are then zeros) times `x`.
fn keep_dot(col: u32, c: u32, x: X32, sums: vec4<f32>) -> f32 {
  let cc = min(c, params.words / 4u - 1u);
  let w = weight16[col * (params.words / 4u) + cc];
  let d = vec4<f32>(keep_word(w.x, x.x0, x.x1), keep_word(w.y, x.x2, x.x3),
                    keep_word(w.z, x.x4, x.x5), keep_word(w.w, x.x6, x.x7));
  return chunk_scaled(col, cc, d, sums);
}

// `s` (four columns) summed over the `width` lanes of a column group: a lane ends with
// column 2 (sg_lane & 1) + (sg_lane >> 1 & 1) (lanes of odd sg_lane keep columns 2, 3 and
// send 0, 1; then the odd ones of each pair keep the second).
fn keep_butterfly(s: vec4<f32>, sg_lane: u32, width: u32) -> f32 {
  let b1 = (sg_lane & 1u) == 1u;
  let h = select(s.xy, s.zw, b1) + subgroupShuffleXor(select(s.zw, s.xy, b1), 1u);
  let b2 = (sg_lane & 2u) == 2u;
  var u = select(h.x, h.y, b2) + subgroupShuffleXor(select(h.y, h.x, b2), 2u);
  for (var m = 4u; m < width; m *= 2u) {
    u += subgroupShuffleXor(u, m);
  }
  return u;
}

fn keep_put(col: u32, u: f32) {
  if (col < params.n) {
    put(0u, col, u + bias_at(col));
  }
}

// Without subgroups as wide as the group: `s` (columns col0 .. col0 + 3) summed in
// workgroup memory over the group's lanes and written (every lane calls it).
fn keep_tree(s: vec4<f32>, lane: u32, col0: u32) {
  keep_red[lane] = s;
  workgroupBarrier();
  let kl = lane % keep_lanes;
  if (kl < 4u) {
    var u = 0.0;
    for (var i = 0u; i < keep_lanes; i++) {
      u += keep_red[lane - kl + i][kl];
    }
    keep_put(col0 + kl, u);
  }
  workgroupBarrier();
}

// Column `col`'s sum over this lane's chunks.
fn keep_col(col: u32, c: vec4<u32>, x0: X32, x1: X32, x2: X32, x3: X32, s0: vec4<f32>,
            s1: vec4<f32>, s2: vec4<f32>, s3: vec4<f32>) -> f32 {
  var d = keep_dot(col, c.x, x0, s0);
  if (keep_reps > 1u) { d += keep_dot(col, c.y, x1, s1); }
  if (keep_reps > 2u) { d += keep_dot(col, c.z, x2, s2); }
  if (keep_reps > 3u) { d += keep_dot(col, c.w, x3, s3); }
  return d;
}

fn keep_item(g: u32, lane: u32, sg_size: u32, sg_lane: u32) {
  norm_prologue(lane, sg_size);
  let kl = lane % keep_lanes;
  let groups = wg_size / keep_lanes;  // column groups per workgroup (1 when keep_lanes >= 32)
  let j = lane / keep_lanes;
  let width = min(keep_lanes, 32u);  // lanes summed by shuffles
  let shuffles = sg_size >= width;
  let last = params.n - 1u;
  let c = vec4<u32>(kl) + vec4<u32>(0u, 1u, 2u, 3u) * keep_lanes;  // this lane's chunks
  let x0 = keep_input(c.x);
  let s0 = keep_sums(c.x);
  var x1: X32;
  var x2: X32;
  var x3: X32;
  var s1 = vec4<f32>(0.0);
  var s2 = vec4<f32>(0.0);
  var s3 = vec4<f32>(0.0);
  if (keep_reps > 1u) { x1 = keep_input(c.y); s1 = keep_sums(c.y); }
  if (keep_reps > 2u) { x2 = keep_input(c.z); s2 = keep_sums(c.z); }
  if (keep_reps > 3u) { x3 = keep_input(c.w); s3 = keep_sums(c.w); }
  let q = 2u * (sg_lane & 1u) + ((sg_lane >> 1u) & 1u);  // the column a summing lane ends with
  let writer = kl % width < 4u;
  for (var t = 0u; t < keep_cols / (keep_batch * groups); t++) {
    let slot = (t * groups + j) * keep_batch;  // this group's columns, from the workgroup's first
    let col0 = g * keep_cols + slot;
    var a = vec4<f32>(0.0);  // columns col0 .. col0 + 3
    var b = vec4<f32>(0.0);  // col0 + 4 .. col0 + 7 (keep_batch 8)
    for (var i = 0u; i < 4u; i++) {
      a[i] = keep_col(min(col0 + i, last), c, x0, x1, x2, x3, s0, s1, s2, s3);
      if (keep_batch > 4u) {
        b[i] = keep_col(min(col0 + 4u + i, last), c, x0, x1, x2, x3, s0, s1, s2, s3);
      }
    }
    if (shuffles) {
      let u = keep_butterfly(a, sg_lane, width);
      var v = 0.0;
      if (keep_batch > 4u) { v = keep_butterfly(b, sg_lane, width); }
      if (writer && keep_lanes > 32u) {
        keep_part[(kl / 32u) * keep_cols + slot + q] = u;
        if (keep_batch > 4u) { keep_part[(kl / 32u) * keep_cols + slot + 4u + q] = v; }
      } else if (writer) {
        keep_put(col0 + q, u);
        if (keep_batch > 4u) { keep_put(col0 + 4u + q, v); }
      }
    } else {
      keep_tree(a, lane, col0);
      if (keep_batch > 4u) { keep_tree(b, lane, col0 + 4u); }
    }
  }
  if (keep_lanes > 32u && shuffles) {
    workgroupBarrier();
    for (var i = lane; i < keep_cols; i += wg_size) {
      var u = 0.0;
      for (var p = 0u; p < keep_lanes / 32u; p++) {
        u += keep_part[p * keep_cols + i];
      }
      keep_put(g * keep_cols + i, u);
    }
  }
}
// ==== cols_const  per kernel: the cols form's columns per invocation, lanes sharing input loads (4 or 8)
const cols_c: u32 = ${c}u;
const cols_share: u32 = ${share}u;
// ==== cols  CPU adapters: cols_c adjacent columns per invocation, the input shared by subgroup broadcasts
// Decode for rows up to CPU_GEMV_ROWS (ops/linear_q4_choice.py). CPU adapters run a
// subgroup's lanes as one SIMD vector, and SwiftShader turns every load whose address is
// not a compile-time constant into a gather, one per 32-bit component: what costs is the
// count of loads, not their bytes. So each lane sweeps K for cols_c columns of one row
// (workgroup g is row g / tiles_n), loading each 32-input chunk's 8 vec4s once per
// subgroup (each lane one or two, then broadcast) for all its columns, and decodes the
// nibbles by the mantissa trick (section mantissa). A tail of K % 32 is read word by word.
// Measured in Chromium (SwiftShader) at 1 x 1152 x 49152: the dot form 235 ms, this one
// with 32 columns 50 ms (16: 58, 8: 62); in a sketch of it (4 columns) without the broadcasts
// 190 ms against 80, with integer conversions 204 ms.

// The chunk's 8 input vec4s, scaled by KEEP_SCALE, and (offsets) its 4 words' input sums.
struct ColsChunk {
  x: array<vec4<f32>, 8>,
  sums: vec4<f32>,
}

fn cols_chunk(base4: u32, sg_lane: u32) -> ColsChunk {
  var x: array<vec4<f32>, 8>;
  if (cols_share == 8u) {
    let v = x4_in(base4 + sg_lane % 8u);
    x[0] = subgroupBroadcast(v, 0u);
    x[1] = subgroupBroadcast(v, 1u);
    x[2] = subgroupBroadcast(v, 2u);
    x[3] = subgroupBroadcast(v, 3u);
    x[4] = subgroupBroadcast(v, 4u);
    x[5] = subgroupBroadcast(v, 5u);
    x[6] = subgroupBroadcast(v, 6u);
    x[7] = subgroupBroadcast(v, 7u);
  } else {
    let v0 = x4_in(base4 + sg_lane % 4u);
    let v1 = x4_in(base4 + 4u + sg_lane % 4u);
    x[0] = subgroupBroadcast(v0, 0u);
    x[1] = subgroupBroadcast(v0, 1u);
    x[2] = subgroupBroadcast(v0, 2u);
    x[3] = subgroupBroadcast(v0, 3u);
    x[4] = subgroupBroadcast(v1, 0u);
    x[5] = subgroupBroadcast(v1, 1u);
    x[6] = subgroupBroadcast(v1, 2u);
    x[7] = subgroupBroadcast(v1, 3u);
  }
  var sums = vec4<f32>(0.0);
  if (has_offsets) {
    let one = vec4<f32>(1.0);
    sums = vec4<f32>(dot(x[0] + x[1], one), dot(x[2] + x[3], one), dot(x[4] + x[5], one),
                     dot(x[6] + x[7], one));
  }
  for (var q = 0u; q < 8u; q++) {
    x[q] *= KEEP_SCALE;
  }
  return ColsChunk(x, sums);
}

// Column `col`'s chunk `c` (words 4c .. 4c + 3) times the chunk's inputs.
fn cols_dot(col: u32, c: u32, ch: ColsChunk) -> f32 {
  let w0 = col * params.words + 4u * c;
  let d = vec4<f32>(keep_word(weight[w0], ch.x[0], ch.x[1]),
                    keep_word(weight[w0 + 1u], ch.x[2], ch.x[3]),
                    keep_word(weight[w0 + 2u], ch.x[4], ch.x[5]),
                    keep_word(weight[w0 + 3u], ch.x[6], ch.x[7]));
  let sc = scale_col(col);
  let k0 = 32u * c;
  var at = vec4<u32>(k0 / params.group);
  if (params.group % 32u != 0u) {  // groups of 8 or 16: a scale per word
    at = vec4<u32>(k0, k0 + 8u, k0 + 16u, k0 + 24u) / params.group;
  }
  at = sc.x + at * sc.y;
  let s = vec4<f32>(f32(scales[at.x]), f32(scales[at.y]), f32(scales[at.z]), f32(scales[at.w]));
  if (has_offsets) {
    let o = vec4<f32>(offset_of(at.x), offset_of(at.y), offset_of(at.z), offset_of(at.w));
    return dot(d, s) + dot(ch.sums, o);
  }
  return dot(d, s);
}

fn cols_item(g: u32, lane: u32, sg_size: u32, sg_lane: u32) {
  let row = g / params.tiles_n;
  let col0 = ((g % params.tiles_n) * wg_size + lane) * cols_c;
  let last = params.n - 1u;
  let chunks = params.words / 4u;
  var acc: array<f32, cols_c>;
  for (var c = 0u; c < chunks; c++) {
    let ch = cols_chunk((row * params.k) / 4u + 8u * c, sg_lane);
    for (var j = 0u; j < cols_c; j++) {
      acc[j] += cols_dot(min(col0 + j, last), c, ch);
    }
  }
  for (var wi = 4u * chunks; wi < params.words; wi++) {  // K % 32: whole words (K % 8 == 0)
    let x = x8_inside(row, wi);
    for (var j = 0u; j < cols_c; j++) {
      let col = min(col0 + j, last);
      let sc = scale_col(col);
      let at = sc.x + ((8u * wi) / params.group) * sc.y;
      acc[j] += dot8(x, ints8(col, wi)) * f32(scales[at]) + sum8(x) * offset_of(at);
    }
  }
  for (var j = 0u; j < cols_c; j++) {
    if (col0 + j < params.n) {
      put(row, col0 + j, acc[j] + bias_at(col0 + j));
    }
  }
}
