// torchao.choose_qparams_affine: one invocation per block (a row of `width` values):
// lo = min(min(x), 0), hi = max(max(x), 0), then torchao's f32 formulas (ops/choose_qparams.py);
// WGSL's round() is half to even, as torch.round; div_rn (linear_dq8_parts.wgsl) divides
// rounded to nearest. The int8 zero point goes into its byte of
// a word the row shares with three others: cleared and set with atomics, so rows need no
// order. No barriers: a CPU adapter runs it as it is.

override wg_size: u32 = 64;

// A float16 scale (force_fp16) is rounded before the zero point is taken from it, so the
// pair is what the next op reads, whether f16 is stored as f16 or as f32.
fn as_stored(v: f32) -> f32 {
  if (params.f16_scale != 0u) {
    return round_half(v);
  }
  return v;
}

// Entry point main (generated): item(row) for each block.
fn item(row: u32) {
  let base = row * params.width;
  var lo = 0.0;
  var hi = 0.0;
  for (var k = 0u; k < params.width; k++) {
    let v = f32(x[base + k]);
    lo = min(lo, v);
    hi = max(hi, v);
  }
  let qmin = f32(params.qmin);
  let qmax = f32(params.qmax);
  var s: f32;
  var z: f32;
  if (params.symmetric != 0u) {
    s = as_stored(max(div_rn(max(-lo, hi), (qmax - qmin) / 2.0), params.eps));
    z = f32((params.qmax + params.qmin + 1) / 2);
  } else {
    s = as_stored(max(div_rn(hi - lo, qmax - qmin), params.eps));
    z = clamp(qmin - round(div_rn(lo, s)), qmin, qmax);
  }
  scale[row] = elem(s);
  let shift = (row & 3u) * 8u;
  atomicAnd(&zp[row >> 2u], ~(0xffu << shift));
  atomicOr(&zp[row >> 2u], (bitcast<u32>(i32(z)) & 0xffu) << shift);
}
