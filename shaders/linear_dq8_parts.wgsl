// The two forms of linear_dq8.wgsl's inner product (ops/linear_dq8.py picks one per adapter):
// dot8(xa, xb, w) = sum of 8 products of int8 activations (xa: k 0-3, xb: k 4-7, a byte
// each) and the 8 signed nibbles of the weight word w (nibble i = weight k i, stored + 8).
// ==== dot_dp4
// The nibbles become 4 signed bytes per word: nibble ^ 8 is the 4-bit two's complement of
// the weight, and a set bit 3 times 0x1e gives the byte's 0xf0 of sign (no carry across
// bytes); dot4I8Packed then sums four products at once.
fn nibbles_i8(w: u32) -> u32 {
  let spread = (w & 0xfu) | ((w & 0xf0u) << 4u) | ((w & 0xf00u) << 8u) | ((w & 0xf000u) << 12u);
  let t = spread ^ 0x08080808u;
  return t | ((t & 0x08080808u) * 0x1eu);
}

fn dot8(xa: u32, xb: u32, w: u32) -> i32 {
  return dot4I8Packed(xa, nibbles_i8(w)) + dot4I8Packed(xb, nibbles_i8(w >> 16u));
}
// ==== dot_i32
fn dot4_i32(x: u32, w: u32) -> i32 {
  var s = 0;
  for (var j = 0u; j < 4u; j++) {
    let xv = extractBits(bitcast<i32>(x), 8u * j, 8u);
    s += xv * (i32((w >> (4u * j)) & 0xfu) - 8);
  }
  return s;
}

fn dot8(xa: u32, xb: u32, w: u32) -> i32 {
  return dot4_i32(xa, w) + dot4_i32(xb, w >> 16u);
}
// ==== div_rn
// a / b rounded to nearest, as torch divides: WGSL lets a / b be 2.5 ulp off (the H200's
// a * rcp(b) is, for 8da4w's (hi - lo) / 255). The quotient is corrected in integers: for
// a = A 2^ea, b = B 2^eb, q = Q 2^eq (24-bit A, B, Q) it is the nearest iff
// |2 (A 2^s - Q B)| < B, s = ea - eb - eq; no float fma, so no contraction can change it.
// Zero, subnormal and non-finite operands or quotients keep the hardware's quotient.
fn mul24(x: u32, y: u32) -> vec2<u32> {  // x * y for x, y < 2^24 as (low, high) words
  let xh = x >> 12u;
  let xl = x & 0xfffu;
  let yh = y >> 12u;
  let yl = y & 0xfffu;
  let t0 = xl * yl;
  let t1 = xh * yl + xl * yh;
  let t2 = xh * yh;
  let a = t0 + (t1 << 12u);
  let c1 = select(0u, 1u, a < t0);
  let lo = a + (t2 << 24u);
  let c2 = select(0u, 1u, lo < a);
  return vec2<u32>(lo, (t1 >> 20u) + (t2 >> 8u) + c1 + c2);
}

fn is_normal(v: f32) -> bool {
  let e = (bitcast<u32>(v) >> 23u) & 0xffu;
  return e != 0u && e != 0xffu;
}

// +1: q is below the nearest quotient, -1: above it, 0: it is the nearest (a, b, q > 0).
fn quotient_side(a: f32, b: f32, q: f32) -> i32 {
  let ab = bitcast<u32>(a);
  let bb = bitcast<u32>(b);
  let qb = bitcast<u32>(q);
  let s = i32(ab >> 23u) - i32(bb >> 23u) - i32(qb >> 23u) + 150;  // exponents less bias
  let k = s + 1;
  if (k < 16 || k > 31) {
    return 0;  // q is nowhere near a / b: leave it
  }
  let am = (ab & 0x7fffffu) | 0x800000u;
  let bm = (bb & 0x7fffffu) | 0x800000u;
  let p = mul24((qb & 0x7fffffu) | 0x800000u, bm);
  let yl = p.x << 1u;
  let yh = (p.y << 1u) | (p.x >> 31u);
  let xl = am << u32(k);
  let xh = am >> u32(32 - k);
  let lo = xl - yl;
  let hi = xh - yh - select(0u, 1u, xl < yl);
  if (hi != 0u && hi != 0xffffffffu) {
    return select(1, -1, (hi & 0x80000000u) != 0u);
  }
  let d = bitcast<i32>(lo);
  if ((hi == 0u && d < 0) || (hi == 0xffffffffu && d >= 0)) {
    return select(-1, 1, hi == 0u);  // beyond i32 but of hi's sign
  }
  if (d > i32(bm)) {
    return 1;
  }
  if (d < -i32(bm)) {
    return -1;
  }
  return 0;
}

fn div_rn(a: f32, b: f32) -> f32 {
  let q = a / b;
  if (!is_normal(a) || !is_normal(b) || !is_normal(q)) {
    return q;
  }
  var m = abs(q);
  for (var i = 0; i < 4; i++) {
    let side = quotient_side(abs(a), abs(b), m);
    if (side == 0) {
      break;
    }
    m = bitcast<f32>(u32(i32(bitcast<u32>(m)) + side));
  }
  return select(m, -m, q < 0.0);
}
