// et_vk.linear_dq8ca_q4gsw (ops/linear_dq8.py): int8 activations x 4-bit weights in integer
// math. `quantize` packs each row of x into int8 words (4 a word, as torchao's quantize_affine:
// clamp(round(x * (1 / scale)) + zp, -128, 127), round() half to even); then one of `mv` (one
// output per invocation), `tile` (4 x 4 outputs per invocation) or `scalar` (any layout, one
// element at a time) sums each group in i32, takes the zero point off through the weight
// sums, and scales by the group's weight scale and the row's scale. No workgroup memory,
// no barriers. dot8 comes from linear_dq8_parts.wgsl (dot4I8Packed or unpacked).

override wg_size: u32 = 64;

// The row's int8 zero point: byte (row % 4) of word row / 4.
fn zero_point(row: u32) -> i32 {
  return extractBits(bitcast<i32>(in_zp[row >> 2u]), (row & 3u) * 8u, 8u);
}

// Clamped as a float, as torch does (and no float beyond i32 is converted).
fn quantize_one(v: f32, inv: f32, zp: i32) -> u32 {
  let q = clamp(round(v * inv) + f32(zp), -128.0, 127.0);
  return bitcast<u32>(i32(q)) & 0xffu;
}

// Entry point quantize (generated): word i of the int8 rows (k past K packs as 0).
fn quantize_word(i: u32) {
  let row = i / params.xwords;
  let k0 = (i - row * params.xwords) * 4u;
  let inv = div_rn(1.0, f32(in_scale[row]));  // torch's 1.0 / scale, rounded to nearest
  let zp = zero_point(row);
  var word = 0u;
  for (var j = 0u; j < 4u; j++) {
    if (k0 + j < params.k) {
      word |= quantize_one(f32(x[row * params.k + k0 + j]), inv, zp) << (8u * j);
    }
  }
  xq[i] = word;
}

// Group g's integer sum of row `row` and column `col` less the zero point's share, scaled.
fn group_term(isum: i32, zp: i32, g: u32, col: u32) -> f32 {
  let s = isum - zp * sums[g * params.sum_stride + col];
  return f32(s) * f32(wscales[g * params.scale_stride + col]);
}

fn finish(acc: f32, row: u32, col: u32) -> f32 {
  var v = acc * f32(in_scale[row]);
  if (params.has_bias != 0u) {
    v += f32(bias[col]);
  }
  return v;
}

// Entry point mv (generated): output i = (row, col), whole weight words (8 per group step).
fn mv_item(i: u32) {
  let row = i / params.n;
  let col = i - row * params.n;
  let zp = zero_point(row);
  let words = params.gsize / 8u;
  var acc = 0.0;
  for (var g = 0u; g < params.groups; g++) {
    let w0 = (col * params.row_bytes) / 4u + g * words;
    let x0 = row * params.xwords + g * words * 2u;
    var isum = 0;
    for (var j = 0u; j < words; j++) {
      isum += dot8(xq[x0 + 2u * j], xq[x0 + 2u * j + 1u], weights[w0 + j]);
    }
    acc += group_term(isum, zp, g, col);
  }
  out[i] = elem(finish(acc, row, col));
}

// Entry point tile (generated): rows 4r..4r+3 x columns 4c..4c+3 (edges read the last
// row or column again and write nothing).
fn tile_item(i: u32) {
  let r0 = (i / params.col_tiles) * 4u;
  let c0 = (i % params.col_tiles) * 4u;
  let words = params.gsize / 8u;
  var rows: array<u32, 4>;
  var cols: array<u32, 4>;
  var zps: array<i32, 4>;
  for (var t = 0u; t < 4u; t++) {
    rows[t] = min(r0 + t, params.rows - 1u);
    cols[t] = min(c0 + t, params.n - 1u);
    zps[t] = zero_point(rows[t]);
  }
  var acc: array<f32, 16>;
  for (var g = 0u; g < params.groups; g++) {
    var isum: array<i32, 16>;
    for (var t = 0u; t < 16u; t++) {
      isum[t] = 0;  // a declaration in a loop is not zeroed again on every adapter
    }
    for (var j = 0u; j < words; j++) {
      var w: array<u32, 4>;
      for (var c = 0u; c < 4u; c++) {
        w[c] = weights[(cols[c] * params.row_bytes) / 4u + g * words + j];
      }
      for (var r = 0u; r < 4u; r++) {
        let x0 = rows[r] * params.xwords + (g * words + j) * 2u;
        let xa = xq[x0];
        let xb = xq[x0 + 1u];
        for (var c = 0u; c < 4u; c++) {
          isum[r * 4u + c] += dot8(xa, xb, w[c]);
        }
      }
    }
    for (var r = 0u; r < 4u; r++) {
      for (var c = 0u; c < 4u; c++) {
        acc[r * 4u + c] += group_term(isum[r * 4u + c], zps[r], g, cols[c]);
      }
    }
  }
  for (var r = 0u; r < 4u; r++) {
    for (var c = 0u; c < 4u; c++) {
      if (r0 + r < params.rows && c0 + c < params.n) {
        out[(r0 + r) * params.n + c0 + c] = elem(finish(acc[r * 4u + c], r0 + r, c0 + c));
      }
    }
  }
}

// The signed 4-bit weight [col, k] from the bytes of the weight rows.
fn weight_at(col: u32, k: u32) -> i32 {
  let b = col * params.row_bytes + k / 2u;
  let byte = (weights[b >> 2u] >> ((b & 3u) * 8u)) & 0xffu;
  return i32((byte >> ((k & 1u) * 4u)) & 0xfu) - 8;
}

// Entry point scalar (generated): output i, one element at a time (any K, group, row bytes).
fn scalar_item(i: u32) {
  let row = i / params.n;
  let col = i - row * params.n;
  let zp = zero_point(row);
  var acc = 0.0;
  for (var g = 0u; g < params.groups; g++) {
    var isum = 0;
    for (var k = g * params.gsize; k < (g + 1u) * params.gsize; k++) {
      let q = extractBits(bitcast<i32>(xq[row * params.xwords + k / 4u]), (k & 3u) * 8u, 8u);
      isum += q * weight_at(col, k);
    }
    acc += group_term(isum, zp, g, col);
  }
  out[i] = elem(finish(acc, row, col));
}
