// Elementwise unary ops on contiguous tensors: one invocation per element, the flat
// index rebuilt from a grid that may be folded into two dimensions. `apply` (the switch
// on `op`) is generated from the table in ops/unary.py; the prelude (Params, bindings)
// by shaders/compose.py. Arithmetic is f32 in both the f32 and the f16 form.

override wg_size: u32 = 256;
override op: u32 = 0u;  // a row of ops/unary.py's table

$f32_math

// Entry point main (generated): item(i) for each element.
fn item(i: u32) {
  y[i] = elem(apply(f32(x[i])));
}
