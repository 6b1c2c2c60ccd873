// RMSNorm over the last dimension: y = x * inverseSqrt(mean(x^2) + eps) * weight.
//
// One kernel family, shaped by two override constants (ops/rms_norm.py picks them):
//   wg_size  invocations per workgroup (a power of two)
//   lanes    invocations per row, a power of two <= wg_size; a workgroup holds
//            wg_size / lanes rows.  lanes == wg_size: one row per workgroup with a
//            halving tree in workgroup memory (the "tree" variants); lanes == 1: one
//            row per invocation, no barrier at all ("row"); between: "tile".
// main_vec4 reads a row once when it fits in 4 vec4s per lane (kept in registers
// between the sum and the write), else twice, 4 loads in flight per lane.
// Entry points: main (f32 loads) and main_vec4 (vec4 loads; width % 4 == 0 only).
// Workgroups beyond one grid dimension fold into y (gpu/interface.py fold_grid).
//
// Squares are summed in f32 and divided by the width, as torch does; the rare row whose
// sum overflows, or underflows with an eps too small to dominate, is redone scaled by
// its largest |x| (snippets.wgsl rms_rescue), so it stays finite where float64 is:
// inside this kernel (rescue_mode inline or tail) or by the second dispatch `rescue`
// over the rows this one flagged in rescue_flags (split).

// Prelude (Params, both views of bindings 0-2): shaders/compose.py from ops/rms_norm.py.

override wg_size: u32 = 64;
override lanes: u32 = 64;

struct Slot {
  row: u32,
  sub: u32,    // this invocation's index among its row's lanes
  live: bool,  // false for the padding rows of the last workgroup
}

fn slot(wid: vec3<u32>, groups: vec3<u32>, li: u32) -> Slot {
  let row = group_index(wid, groups) * (wg_size / lanes) + li / lanes;
  return Slot(row, li % lanes, row < params.num_rows);
}

// Sum of `sum` over the `lanes` invocations that share a row. Every invocation of the
// workgroup calls it (barriers), padding rows included.
fn row_total(sum: f32, li: u32) -> f32 {
  if (lanes == 1u) {
    return sum;
  }
  return tree(li, lanes, sum, false);
}

@compute @workgroup_size(wg_size)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let s = slot(wid, groups, li);
  let width = params.width;
  let base = s.row * width;
  var sum = 0.0;
  if (s.live) {
    for (var j = s.sub; j < width; j += lanes) {
      let v = f32(x[base + j]);
      sum += v * v;
    }
  }
  let total = row_total(sum, li);
  // The rare row (snippets.wgsl rms_rescue; rescue_mode is a pipeline constant, so two
  // of these three branches fold away). No barrier follows: returning here is safe.
  let rescue = rms_needs_rescue(total);
  let first = s.live && s.sub == 0u;
  if (rescue_mode == RESCUE_TAIL && rescue) {
    if (first) {
      rms_rescue_row(base, total);
    }
    return;
  }
  if (rescue_mode == RESCUE_SPLIT && rescue && first) {
    rescue_flags[s.row] = 1u;
  }
  let in_place = rescue_mode == RESCUE_INLINE && rescue;
  if (in_place && first) {
    rms_rescue_row(base, total);
  }
  let rstd = inverseSqrt(total / f32(width) + params.eps);
  if (s.live && !in_place) {
    for (var j = s.sub; j < width; j += lanes) {
      y[base + j] = elem(f32(x[base + j]) * rstd * f32(weight[j]));
    }
  }
}

fn load4(i: u32, ok: bool) -> vec4<f32> {
  if (ok) {
    return vec4<f32>(x4[i]);
  }
  return vec4<f32>(0.0);
}

fn store4(i: u32, j: u32, v: vec4<f32>, rstd: f32, ok: bool) {
  if (ok) {
    y4[i] = vec4<elem>(v * rstd * vec4<f32>(weight4[j]));
  }
}

@compute @workgroup_size(wg_size)
fn main_vec4(@builtin(workgroup_id) wid: vec3<u32>,
             @builtin(num_workgroups) groups: vec3<u32>,
             @builtin(local_invocation_index) li: u32) {
  let s = slot(wid, groups, li);
  let width4 = params.width / 4u;
  let base = s.row * width4;
  if (width4 <= 4u * lanes) {  // uniform: the row fits in registers, read it once
    row_in_registers(s, base, width4, li);
    return;
  }
  var sum = 0.0;
  if (s.live) {
    var j = s.sub;
    for (; j + 3u * lanes < width4; j += 4u * lanes) {
      let a = vec4<f32>(x4[base + j]);
      let b = vec4<f32>(x4[base + j + lanes]);
      let c = vec4<f32>(x4[base + j + 2u * lanes]);
      let d = vec4<f32>(x4[base + j + 3u * lanes]);
      sum += ((dot(a, a) + dot(b, b)) + dot(c, c)) + dot(d, d);
    }
    for (; j < width4; j += lanes) {
      let v = vec4<f32>(x4[base + j]);
      sum += dot(v, v);
    }
  }
  let total = row_total(sum, li);
  let rescue = rms_needs_rescue(total);
  if (rescue_mode == RESCUE_TAIL && rescue) {
    rescue_tail4(s, base, total);
    return;
  }
  let live = s.live && !rare_row4(s, base, total, rescue);
  let rstd = inverseSqrt(total / f32(params.width) + params.eps);
  // The writes are independent: no need to keep several loads in flight by hand.
  for (var j = s.sub; j < width4; j += lanes) {
    store4(base + j, j, vec4<f32>(x4[base + j]), rstd, live);
  }
}

// main_vec4 when the row fits in 4 vec4s per lane. A function of its own: its rare-row
// return (RESCUE_TAIL, non-uniform) must not make main_vec4's later barriers
// non-uniform (WGSL's uniformity analysis; control flow reconverges at a call's end).
fn row_in_registers(s: Slot, base: u32, width4: u32, li: u32) {
  let j0 = s.sub;
  let j1 = j0 + lanes;
  let j2 = j1 + lanes;
  let j3 = j2 + lanes;
  let a = load4(base + j0, s.live && j0 < width4);
  let b = load4(base + j1, s.live && j1 < width4);
  let c = load4(base + j2, s.live && j2 < width4);
  let d = load4(base + j3, s.live && j3 < width4);
  let sum = ((dot(a, a) + dot(b, b)) + dot(c, c)) + dot(d, d);
  let total = row_total(sum, li);
  let rescue = rms_needs_rescue(total);
  if (rescue_mode == RESCUE_TAIL && rescue) {  // a..d are dead in here
    rescue_tail4(s, base, total);
    return;
  }
  let in_place = rare_row4(s, base, total, rescue);
  let rstd = inverseSqrt(total / f32(params.width) + params.eps);
  let live = s.live && !in_place;
  store4(base + j0, j0, a, rstd, live && j0 < width4);
  store4(base + j1, j1, b, rstd, live && j1 < width4);
  store4(base + j2, j2, c, rstd, live && j2 < width4);
  store4(base + j3, j3, d, rstd, live && j3 < width4);
}

// main_vec4's rare row under RESCUE_TAIL: its first lane redoes it (one float at a
// time: few registers), all lanes then leave.
fn rescue_tail4(s: Slot, base: u32, total: f32) {
  if (s.live && s.sub == 0u) {
    rms_rescue_row4_lean(base, total);
  }
}

// main_vec4's rare row under the other modes: RESCUE_SPLIT flags it, RESCUE_INLINE
// redoes it here; true when the caller must skip its stores (RESCUE_INLINE).
fn rare_row4(s: Slot, base: u32, total: f32, rescue: bool) -> bool {
  let first = s.live && s.sub == 0u;
  if (rescue_mode == RESCUE_SPLIT && rescue && first) {
    rescue_flags[s.row] = 1u;
  }
  let in_place = rescue_mode == RESCUE_INLINE && rescue;
  if (in_place && first) {
    rms_rescue_row4(base, total);
  }
  return in_place;
}

// RESCUE_SPLIT's second dispatch (generated entry `rescue`, one invocation per row):
// rows the first dispatch did not flag return at once.
fn rescue_flagged(row: u32) {
  if (rescue_flags[row] == 0u) {
    return;
  }
  rescue_flags[row] = 0u;  // nothing else clears it: the next run starts from zeros
  let base = row * params.width;
  var total = 0.0;  // the plain f32 sum: rms_rescue_scale falls back to it (rows of 0 or inf)
  for (var j = 0u; j < params.width; j++) {
    let v = f32(x[base + j]);
    total += v * v;
  }
  rms_rescue_row(base, total);
}
