// Resampling of the two trailing dims (aten.upsample_nearest2d.vec,
// aten.upsample_bilinear2d.vec): one output element per invocation of a contiguous
// (planes, H, W) tensor. Per dim the host picks torch's index rule (rule_h, rule_w:
// 0 copy, 1 dst >> 1, 2 scaled) and the float32 scale torch computes; the one f32
// multiply here rounds as the CPU's does, so nearest indices match torch exactly.
//
// Prelude (Params, bindings): shaders/compose.py from ops/upsample.py.

override wg_size: u32 = 256;
override mode: u32 = 0u;  // 0 nearest, 1 bilinear

const BILINEAR = 1u;
const COPY = 0u;
const HALF = 1u;

fn nearest_source(rule: u32, scale: f32, dst: u32, size: u32) -> u32 {
  if (rule == COPY) { return dst; }
  if (rule == HALF) { return dst >> 1u; }
  return min(u32(floor(f32(dst) * scale)), size - 1u);
}

// (i0, i1) and the weight l1 of i1 (l0 = 1 - l1) for one dim of bilinear.
struct Taps {
  i0: u32,
  i1: u32,
  l1: f32,
}

fn bilinear_source(rule: u32, scale: f32, dst: u32, size: u32) -> Taps {
  if (rule == COPY) { return Taps(dst, dst, 0.0); }
  var src = scale * f32(dst);
  if (params.align == 0u) {
    src = max(scale * (f32(dst) + 0.5) - 0.5, 0.0);
  }
  let i0 = min(u32(floor(src)), size - 1u);
  let l1 = clamp(src - f32(i0), 0.0, 1.0);
  return Taps(i0, select(i0, i0 + 1u, i0 < size - 1u), l1);
}

// Entry point main (generated): upsample_item(i) for each output element.
fn upsample_item(i: u32) {
  let ow = i % params.out_w;
  let rest = i / params.out_w;
  let oh = rest % params.out_h;
  let base = (rest / params.out_h) * params.in_h * params.in_w;
  if (mode != BILINEAR) {
    let h = nearest_source(params.rule_h, params.scale_h, oh, params.in_h);
    let w = nearest_source(params.rule_w, params.scale_w, ow, params.in_w);
    y[i] = x[base + h * params.in_w + w];
    return;
  }
  let th = bilinear_source(params.rule_h, params.scale_h, oh, params.in_h);
  let tw = bilinear_source(params.rule_w, params.scale_w, ow, params.in_w);
  let r0 = base + th.i0 * params.in_w;
  let r1 = base + th.i1 * params.in_w;
  let w0 = 1.0 - tw.l1;
  let top = f32(x[r0 + tw.i0]) * w0 + f32(x[r0 + tw.i1]) * tw.l1;
  let bottom = f32(x[r1 + tw.i0]) * w0 + f32(x[r1 + tw.i1]) * tw.l1;
  y[i] = elem(top * (1.0 - th.l1) + bottom * th.l1);
}
