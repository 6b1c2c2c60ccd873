// The two forms of linear_q8.wgsl's dot over one u32 word of four int8 (x) by four int8
// (w): vec2(sum x*w, sum w). ops/linear_q8.py's variants pick one.
// ==== dot4: WGSL's packed_4x8_integer_dot_product (dot4I8Packed)
fn dot_words(a: u32, b: u32) -> vec2<i32> {
  return vec2<i32>(dot4I8Packed(a, b), dot4I8Packed(0x01010101u, b));
}
// ==== unpack: each byte sign-extended in i32 (shift left, arithmetic shift right)
fn dot_words(a: u32, b: u32) -> vec2<i32> {
  var acc = vec2<i32>(0, 0);
  for (var j = 0u; j < 4u; j++) {
    let xa = bitcast<i32>(a << (24u - 8u * j)) >> 24u;
    let wb = bitcast<i32>(b << (24u - 8u * j)) >> 24u;
    acc += vec2<i32>(xa * wb, wb);
  }
  return acc;
}
