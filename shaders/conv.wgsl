// Direct convolutions (ops/conv.py): one output element per invocation, f32 sums, no
// workgroup memory (CPU adapters, and every form the tiles do not take). NCHW: x [N, Cin,
// H, W], weight [Cout, Cin/groups, kh, kw] (transposed: [Cin, Cout/groups, kh, kw]),
// out [N, Cout, OH, OW]; 1-D convolutions come with H = kh = 1. Taps outside the input
// (padding) add nothing. Prelude (Params, bindings, entries): shaders/compose.py.

override wg_size: u32 = 256;

struct Out {
  b: u32,
  co: u32,
  oy: u32,
  ox: u32,
}

fn out_at(i: u32) -> Out {
  var t = i / params.ow;
  let ox = i % params.ow;
  let oy = t % params.oh;
  t /= params.oh;
  return Out(t / params.cout, t % params.cout, oy, ox);
}

// Every form stores through `finish` (bias, residual, clamp: shaders/conv_parts.wgsl).

// The input coordinate that tap k of output coordinate o reads, or -1 in the padding.
fn in_row(o: i32, k: u32, pad: u32, dil: u32, stride: u32, size: u32) -> i32 {
  let t = o * i32(stride) + i32(k * dil) - i32(pad);
  return select(-1, t, t >= 0 && t < i32(size));
}

fn direct_item(i: u32) {
  let o = out_at(i);
  let g = o.co / params.cout_g;
  var acc = 0.0;
  for (var ci = 0u; ci < params.cin_g; ci++) {
    let xc = (o.b * params.cin + g * params.cin_g + ci) * params.h;
    let wc = (o.co * params.cin_g + ci) * params.kh;
    for (var ky = 0u; ky < params.kh; ky++) {
      let iy = in_row(i32(o.oy), ky, params.py, params.dy, params.sy, params.h);
      if (iy < 0) {
        continue;
      }
      let xr = (xc + u32(iy)) * params.w;
      let wr = (wc + ky) * params.kw;
      for (var kx = 0u; kx < params.kw; kx++) {
        let ix = in_row(i32(o.ox), kx, params.px, params.dx, params.sx, params.w);
        if (ix >= 0) {
          acc += f32(x[xr + u32(ix)]) * f32(weight[wr + kx]);
        }
      }
    }
  }
  finish(i, o.co, acc);
}

// groups == Cin: output channel co reads input channel co / (Cout / Cin) only.
fn depthwise_item(i: u32) {
  let o = out_at(i);
  let xc = (o.b * params.cin + o.co / params.cout_g) * params.h;
  var acc = 0.0;
  for (var ky = 0u; ky < params.kh; ky++) {
    let iy = in_row(i32(o.oy), ky, params.py, params.dy, params.sy, params.h);
    if (iy < 0) {
      continue;
    }
    let xr = (xc + u32(iy)) * params.w;
    let wr = (o.co * params.kh + ky) * params.kw;
    for (var kx = 0u; kx < params.kw; kx++) {
      let ix = in_row(i32(o.ox), kx, params.px, params.dx, params.sx, params.w);
      if (ix >= 0) {
        acc += f32(x[xr + u32(ix)]) * f32(weight[wr + kx]);
      }
    }
  }
  finish(i, o.co, acc);
}

// Transposed: input (iy, ix) tap (ky, kx) lands on oy = iy * sy - py + ky * dy, so an
// output reads the inputs whose (oy + py - ky * dy) divides by the stride.
fn source(o: u32, k: u32, pad: u32, dil: u32, stride: u32, size: u32) -> i32 {
  let t = i32(o + pad) - i32(k * dil);
  if (t < 0 || t % i32(stride) != 0) {
    return -1;
  }
  let s = t / i32(stride);
  return select(-1, s, s < i32(size));
}

fn transposed_item(i: u32) {
  let o = out_at(i);
  let g = o.co / params.cout_g;
  let j = o.co % params.cout_g;
  var acc = 0.0;
  for (var c = 0u; c < params.cin_g; c++) {
    let ci = g * params.cin_g + c;
    let xc = (o.b * params.cin + ci) * params.h;
    let wc = (ci * params.cout_g + j) * params.kh;
    for (var ky = 0u; ky < params.kh; ky++) {
      let iy = source(o.oy, ky, params.py, params.dy, params.sy, params.h);
      if (iy < 0) {
        continue;
      }
      let xr = (xc + u32(iy)) * params.w;
      let wr = (wc + ky) * params.kw;
      for (var kx = 0u; kx < params.kw; kx++) {
        let ix = source(o.ox, kx, params.px, params.dx, params.sx, params.w);
        if (ix >= 0) {
          acc += f32(x[xr + u32(ix)]) * f32(weight[wr + kx]);
        }
      }
    }
  }
  finish(i, o.co, acc);
}

// Split K: the partial sums of the implicit GEMM's splits added in order, then finished.
fn split_item(i: u32) {
  finish(i, out_at(i).co, split_k_sum(i, params.splits, params.numel));
}
