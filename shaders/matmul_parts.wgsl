// Pieces of the matmul kernels (ops/matmul.py composes them with compose.fill and
// compose.sections): the epilogues `put(row, col, v)` every form stores through, the
// tile8 K loops and the gemv sweeps, reductions and entry points appended to
// shaders/matmul_gemv.wgsl. A section runs from its `// ==== name` line to the next;
// $name / ${name} are the values Python fills in.
// ==== put  one output: out[row, col] = v
fn put(row: u32, col: u32, v: f32) {
  out[row * params.n + col] = elem(v);
}
// ==== put_split2  linears sharing an input, weights stacked: [0, n0) to out, the rest to out1
fn put(row: u32, col: u32, v: f32) {
  if (col < params.n0) {
    out[row * params.n0 + col] = elem(v);
    return;
  }
  out1[row * (params.n - params.n0) + col - params.n0] = elem(v);
}
// ==== put_split3  the same for three: [0, n0) out, [n0, n1) out1, [n1, n) out2
fn put(row: u32, col: u32, v: f32) {
  if (col < params.n0) {
    out[row * params.n0 + col] = elem(v);
    return;
  }
  if (col < params.n1) {
    out1[row * (params.n1 - params.n0) + col - params.n0] = elem(v);
    return;
  }
  out2[row * (params.n - params.n1) + col - params.n1] = elem(v);
}
// ==== put_residual  out = resid + v, rounded as the unfused linear then add.Tensor round
fn put(row: u32, col: u32, v: f32) {
  let at = row * params.n + col;
  out[at] = elem(f32(resid[at]) + f32(elem(v)));
}
// ==== put_conv  a 1x1 convolution as [HW, Cin] x [Cout, Cin]: stored transposed into NCHW, clamped to [n0, n1] (f32 bits; torch.clamp: NaN stays NaN)
fn put(row: u32, col: u32, v: f32) {
  out[col * params.m + row] = elem(clamp_f32(v, bitcast<f32>(params.n0), bitcast<f32>(params.n1)));
}
// ==== put_conv_resid  put_conv with a residual: clamp(resid + v), v rounded first as the unfused add
fn put(row: u32, col: u32, v: f32) {
  let at = col * params.m + row;
  out[at] = elem(clamp_f32(f32(resid[at]) + f32(elem(v)), bitcast<f32>(params.n0), bitcast<f32>(params.n1)));
}
// ==== fma_8x8  mm4 tiles (and conv_gemm.wgsl): a lane's 8 x 8 block, by one k (fma_8x8) and one K step (fma_step); acc[2 i + h] is
// row i (0-3: a_lo's, 4-7: a_hi's), column half h (w_lo, w_hi); constant indices only
fn fma_8x8(acc: ptr<function, array<vec4<f32>, 16>>, a_lo: vec4<f32>, a_hi: vec4<f32>,
           w_lo: vec4<f32>, w_hi: vec4<f32>) {
  (*acc)[0] += a_lo.x * w_lo;
  (*acc)[1] += a_lo.x * w_hi;
  (*acc)[2] += a_lo.y * w_lo;
  (*acc)[3] += a_lo.y * w_hi;
  (*acc)[4] += a_lo.z * w_lo;
  (*acc)[5] += a_lo.z * w_hi;
  (*acc)[6] += a_lo.w * w_lo;
  (*acc)[7] += a_lo.w * w_hi;
  (*acc)[8] += a_hi.x * w_lo;
  (*acc)[9] += a_hi.x * w_hi;
  (*acc)[10] += a_hi.y * w_lo;
  (*acc)[11] += a_hi.y * w_hi;
  (*acc)[12] += a_hi.z * w_lo;
  (*acc)[13] += a_hi.z * w_hi;
  (*acc)[14] += a_hi.w * w_lo;
  (*acc)[15] += a_hi.w * w_hi;
}
// One K step's products from workgroup memory (a_s: the tile's rows, w_s: its columns,
// [tk][tile / 4] each) into the lane's 8 x 8 block.
fn fma_step(acc: ptr<function, array<vec4<f32>, 16>>, lid: vec3<u32>) {
  for (var c = 0u; c < tk; c++) {
    let base = c * 2u * tw;
    let a_lo = a_s[base + lid.y];
    let a_hi = a_s[base + tw + lid.y];
    let w_lo = w_s[base + lid.x];
    let w_hi = w_s[base + tw + lid.x];
    fma_8x8(acc, a_lo, a_hi, w_lo, w_hi);
  }
}
// ==== tile8_whole  mm4 tiles, K whole: a lane's four outputs stored (bias added)
fn keep4(row: u32, col: u32, v: vec4<f32>, part: u32) {
  store4(row, col, v);
}
// ==== tile8_split  mm4 tiles, K split (ops/split_k.py): span `part`'s sums to kparts [splits, M, N]; sum_parts adds the spans in order, the bias, and stores
override wg_size: u32 = 64;  // sum_parts'

fn keep4(row: u32, col: u32, v: vec4<f32>, part: u32) {
  let at = (part * params.m + row) * params.n + col;
  for (var j = 0u; j < 4u; j++) {
    if (col + j < params.n) {
      kparts[at + j] = v[j];
    }
  }
}

fn sum_item(i: u32) {
  let col = i % params.n;
  var s = split_k_sum(i, params.splits, params.m * params.n);
  if (params.has_bias == 1u) {
    s += f32(bias[col]);
  }
  put(i / params.n, col, s);
}
// ==== tile8_steps  mm4 tiles: the K loop, each step staged by stage_scalar or stage_vec4 (matmul_tile8.wgsl), then computed
fn k_steps(acc: ptr<function, array<vec4<f32>, 16>>, m0: u32, n0: u32, k_begin: u32, k_end: u32,
           lid: vec3<u32>, li: u32) {
  for (var k0 = k_begin; k0 < k_end; k0 += tk) {
    stage_$form(m0, n0, k0, li);
    workgroupBarrier();
    fma_step(acc, lid);
    workgroupBarrier();
  }
}
// ==== tile8_prefetch  mm4 tiles, vec4 form: step k0 + tk's loads in flight (registers) while step k0 is computed
fn k_steps(acc: ptr<function, array<vec4<f32>, 16>>, m0: u32, n0: u32, k_begin: u32, k_end: u32,
           lid: vec3<u32>, li: u32) {
  put_fetched(fetch(m0, n0, k_begin, li), li);
  workgroupBarrier();
  for (var k0 = k_begin; k0 < k_end; k0 += tk) {
    let more = k0 + tk < k_end;  // uniform: the barriers stay in uniform control flow
    var next: Fetched;
    if (more) {
      next = fetch(m0, n0, k0 + tk, li);
    }
    fma_step(acc, lid);
    workgroupBarrier();  // step k0 read: its workgroup memory is free
    if (more) {
      put_fetched(next, li);
    }
    workgroupBarrier();
  }
}
// ==== gemv_consts  gemv: a kernel per row count, depth, column groups (naga 29: no rows override)
const rows: u32 = ${rows}u;  // input rows per workgroup
const depth: u32 = ${depth}u;  // steps per iteration: loads in flight
const col_groups: u32 = ${col_groups}u;  // column groups per workgroup
// ==== step  gemv: one of the depth steps of a sweep's unrolled loop
    s = step_$form(s, rb, cb, j + ${i}u * span);
// ==== sweep  gemv: a sweep along K for one load width (step_scalar, step_vec4, step_packed)

fn sweep_$form(b: Block, sub: u32) -> Sums {
  var s: Sums;
  let span = wg_size / col_groups;  // the group's lanes
  let len = params.k / ${per_step}u;  // steps along K
  let rb = row_bases(b, params.k / ${per_input}u);
  let cb = col_bases(b, len);
  var j = sub;
  for (; j + (depth - 1u) * span < len; j += depth * span) {
$steps  }
  for (; j < len; j += span) {
    s = step_$form(s, rb, cb, j);
  }
  return s;
}
// ==== tree_sum  gemv: lane sums meet in a halving tree in workgroup memory

var<workgroup> part: array<vec4<f32>, wg_size * cols>;  // [column][lane]

// Lane c (< cols) of each column group gets its column c's total over the group's
// lanes: a halving tree in workgroup memory.
fn tree_sum(s: Sums, me: u32) -> vec4<f32> {
  part[me] = s.c0;
  if (cols > 1u) { part[wg_size + me] = s.c1; }
  if (cols > 2u) {
    part[2u * wg_size + me] = s.c2;
    part[3u * wg_size + me] = s.c3;
  }
  workgroupBarrier();
  let sub = me % (wg_size / col_groups);
  for (var stride = wg_size / col_groups / 2u; stride > 0u; stride /= 2u) {
    if (sub < stride) {
      for (var c = 0u; c < cols; c++) {
        part[c * wg_size + me] += part[c * wg_size + me + stride];
      }
    }
    workgroupBarrier();
  }
  return part[min(sub, cols - 1u) * wg_size + me - sub];
}

fn pick(t: Sums, c: u32) -> vec4<f32> {
  return select(select(select(t.c0, t.c1, c == 1u), t.c2, c == 2u), t.c3, c == 3u);
}
// ==== tree_lanes  gemv without subgroups: lanes_sum is the tree

fn lanes_sum(s: Sums, me: u32) -> vec4<f32> {
  return tree_sum(s, me);
}
// ==== subgroup_sum  gemv with subgroups: lanes_sum by subgroupAdd / subgroupShuffleXor

// Lane c (< cols) of each column group gets its column c's total. One column group:
// subgroupAdd, and when the workgroup spans several subgroups their totals meet in
// workgroup memory (which lanes share a subgroup is the implementation's choice: each
// subgroup's first lane posts, the others zeros). Several groups in a workgroup that is
// one subgroup: butterflies within each group's lanes (subgroupShuffleXor); in several
// subgroups, the tree.
fn lanes_sum(s: Sums, me: u32, sg_size: u32, sg_lane: u32) -> vec4<f32> {
  if (col_groups > 1u) {
    if (sg_size != wg_size) {
      return tree_sum(s, me);
    }
    var t = s;
    for (var m = wg_size / col_groups / 2u; m > 0u; m /= 2u) {
      t.c0 += subgroupShuffleXor(t.c0, m);
      if (cols > 1u) { t.c1 += subgroupShuffleXor(t.c1, m); }
      if (cols > 2u) {
        t.c2 += subgroupShuffleXor(t.c2, m);
        t.c3 += subgroupShuffleXor(t.c3, m);
      }
    }
    return pick(t, me % (wg_size / col_groups));
  }
  var t = Sums(subgroupAdd(s.c0), vec4<f32>(0.0), vec4<f32>(0.0), vec4<f32>(0.0));
  if (cols > 1u) { t.c1 = subgroupAdd(s.c1); }
  if (cols > 2u) {
    t.c2 = subgroupAdd(s.c2);
    t.c3 = subgroupAdd(s.c3);
  }
  if (sg_size >= wg_size) {  // the whole workgroup is one subgroup: no barrier
    return pick(t, me);
  }
  let lead = sg_lane == 0u;
  let zero = vec4<f32>(0.0);
  part[me] = select(zero, t.c0, lead);
  if (cols > 1u) { part[wg_size + me] = select(zero, t.c1, lead); }
  if (cols > 2u) {
    part[2u * wg_size + me] = select(zero, t.c2, lead);
    part[3u * wg_size + me] = select(zero, t.c3, lead);
  }
  workgroupBarrier();
  var all = vec4<f32>(0.0);
  if (me < cols) {
    for (var i = 0u; i < wg_size; i++) {
      all += part[me * wg_size + i];
    }
  }
  return all;
}
// ==== x_plain  gemv: the vec4 sweeps read the input rows as they are
fn x4_at(base: u32, slot: u32, j: u32) -> vec4<f32> {
  return vec4<f32>(input4[base + j]);
}
// ==== gemv_norm  gemv with an RMSNorm prologue (pte_webgpu.norm_linear): the sweeps read the input normalised
// Each workgroup first finds its block's rows' scales (the f32 sum of squares over its
// lanes; the rare row rescaled by 2^k as et_vk.rms_norm redoes it: snippets.wgsl
// rare_row4), then the sweeps normalise as they load, elem(x 2^k rstd w), rounded as the
// norm's output tensor would be: the norm's own dispatch and its output's round trip are
// gone. Decode rows only (ops/matmul.py takes_norm): every workgroup pays one more pass
// over its rows, from cache. Per-row values sit in named components: a vec4 indexed in a
// loop went to local memory on NVIDIA's driver (decode 5% slower than without the fold).
// In the f32 form the scales come last instead (norm_late): the sweep reads x * w
// (rstd 1) and adds up each row's squares on the way (norm_ss), the lanes' squares meet
// as their sums do, and the sums are scaled by each row's rstd; a rare row's block is
// swept again with its scales set first. The pass over the rows before the sweep (and its
// reduction) held up every workgroup's weight loads: ~5 µs of a q/k/v product's 17 on
// an H100. f32 only: the f16 form rounds the normalised x to f16, as the norm would.
var<private> norm_rstd: vec4<f32>;  // per row of the block
var<private> norm_k: vec4<i32>;  // 2^k scales x on a rare row (0 otherwise)
var<private> norm_ss: vec4<f32>;  // the lane's part of its rows' sums of squares (norm_late)

fn x4_at(base: u32, slot: u32, j: u32) -> vec4<f32> {
  var v = vec4<f32>(input4[base + j]);
  norm_ss[slot] += dot(v, v);  // slot: a constant at every call
  let k = norm_k[slot];
  if (k != 0) {
    v = scale4(v, k);
  }
  return vec4<f32>(vec4<elem>(v * norm_rstd[slot] * vec4<f32>(gamma4[j])));
}

// (k, rstd) of the row starting at vec4 `base` with the f32 sum of squares `total`.
fn norm_scale(base: u32, total: f32) -> vec2<f32> {
  let width = f32(params.k);
  if (!norm_row_is_rare(total, width, params.eps)) {
    return vec2<f32>(0.0, inverseSqrt(total / width + params.eps));
  }
  // the rare row: every lane redoes it alike (snippets.wgsl rare_row4)
  return rare_row4_scale(base, params.k / 4u, total, width, params.eps);
}

// This lane's part of the block's rows' sums of squares (components: the rows).
fn norm_squares(b: Block, lane: u32) -> vec4<f32> {
  let k4 = params.k / 4u;
  let rb = row_bases(b, k4);
  var ss = vec4<f32>(0.0);
  for (var j = lane; j < k4; j += wg_size) {
    let v0 = vec4<f32>(input4[rb.x + j]);
    ss.x += dot(v0, v0);
    if (rows > 1u) { let v = vec4<f32>(input4[rb.y + j]); ss.y += dot(v, v); }
    if (rows > 2u) { let v = vec4<f32>(input4[rb.z + j]); ss.z += dot(v, v); }
    if (rows > 3u) { let v = vec4<f32>(input4[rb.w + j]); ss.w += dot(v, v); }
  }
  return ss;
}

// The workgroup's parts summed in a halving tree (every lane calls it: barriers).
fn norm_tree(ss: vec4<f32>, lane: u32) -> vec4<f32> {
  part[lane] = ss;
  workgroupBarrier();
  for (var stride = wg_size / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      part[lane] += part[lane + stride];
    }
    workgroupBarrier();
  }
  let total = part[0];
  workgroupBarrier();  // part is free again for lanes_sum
  return total;
}

// Whether a row of the block is rare (its scales need rare_row4's rescaled pass).
fn norm_any_rare(total: vec4<f32>) -> bool {
  let width = f32(params.k);
  var rare = norm_row_is_rare(total.x, width, params.eps);
  if (rows > 1u) { rare = rare || norm_row_is_rare(total.y, width, params.eps); }
  if (rows > 2u) { rare = rare || norm_row_is_rare(total.z, width, params.eps); }
  if (rows > 3u) { rare = rare || norm_row_is_rare(total.w, width, params.eps); }
  return rare;
}

var<workgroup> norm_total: vec4<f32>;  // the block's rows' sums of squares (norm_late)

fn set_norm(b: Block, total: vec4<f32>) {
  let rb = row_bases(b, params.k / 4u);
  let s0 = norm_scale(rb.x, total.x);
  var s1 = s0;
  var s2 = s0;
  var s3 = s0;
  if (rows > 1u) { s1 = norm_scale(rb.y, total.y); }
  if (rows > 2u) { s2 = norm_scale(rb.z, total.z); }
  if (rows > 3u) { s3 = norm_scale(rb.w, total.w); }
  norm_k = vec4<i32>(i32(s0.x), i32(s1.x), i32(s2.x), i32(s3.x));
  norm_rstd = vec4<f32>(s0.y, s1.y, s2.y, s3.y);
}
// ==== gemv_gated  gemv with a gated-input prologue (pte_webgpu.gated_linear): the sweeps read chain_value(input, up)
// The input is an element-wise chain of two tensors (SwiGLU: silu(gate) * up), the
// chain's own steps (ops/fused_elementwise.py chain_value, each rounded to elem as its
// kernel rounds them) computed as each element is loaded: its dispatch and its output's
// round trip are gone. Every workgroup recomputes its rows' values (decode rows only,
// ops/matmul.py takes_prologue).
fn x4_at(base: u32, slot: u32, j: u32) -> vec4<f32> {
  let g = vec4<f32>(input4[base + j]);
  let u = vec4<f32>(up4[base + j]);
  return vec4<f32>(chain_value(g.x, u.x), chain_value(g.y, u.y), chain_value(g.z, u.z),
                   chain_value(g.w, u.w));
}
// ==== gemv_merge  gemv with the split attention's merge as its prologue (ops/attention_merge.py): the sweeps read the merged heads
// The input row is a decode step's attention output left as parts, merged as each element
// is loaded (snippets.wgsl attention_merge; set_merge first, in the entry's prologue):
// the merge's dispatch and its output's round trip are gone. One row (decode): every
// row of a block reads row 0's elements.
fn x4_at(base: u32, slot: u32, j: u32) -> vec4<f32> {
  return merged4(j);
}
// ==== gemv_entry  gemv: an entry point (main, main_vec4, main_packed)

@compute @workgroup_size(wg_size)
fn $name(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32) {
  let g = group_index(wid, groups);
  if (g >= params.tiles) {
    return;  // uniform for the whole workgroup
  }
  let me = lane;
  let span = wg_size / col_groups;
  let sub = me % span;  // lane within its column group
  let b = block_of(g, me / span);
$prologue  write_column(b, sub, $total);
}
// ==== gemv_entry_subgroups  the same with the subgroup builtins (me: the subgroup lane)

@compute @workgroup_size(wg_size)
fn $name(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) lane: u32,
    @builtin(subgroup_size) sg_size: u32, @builtin(subgroup_invocation_id) sg_lane: u32) {
  let g = group_index(wid, groups);
  if (g >= params.tiles) {
    return;  // uniform for the whole workgroup
  }
  let me = select(lane, sg_lane, sg_size == wg_size);
  let span = wg_size / col_groups;
  let sub = me % span;  // lane within its column group
  let b = block_of(g, me / span);
$prologue  write_column(b, sub, $total);
}
