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
