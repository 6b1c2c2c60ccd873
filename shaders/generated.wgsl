// The functions op families put in a kernel's `generated` part, as templates they fill
// in (`$name` placeholders; each section is exactly the text it gives, so a comment
// about one sits on its `// ====` line). ops/mixed.py: `item` per op and operand types;
// ops/fill.py: `value_at` per output type; ops/any_reduce.py: `nonzero` per input type;
// ops/fused_elementwise.py: a chain's steps, `chain_value` and `chain_item`; ops/unary.py's
// `apply` and ops/binary.py's `combine`: the switch on the `op` override over their
// table's rows.
// ==== apply: `cases` from compose.cases (one per unary table row); else v unchanged
fn apply(v: f32) -> f32 {
  switch op {
$cases    default: { return v; }
  }
}
// ==== combine: `cases` from compose.cases (one per binary table row); else x
fn combine(x: f32, y: f32) -> f32 {
  switch op {
$cases    default: { return x; }
  }
}
// ==== mixed_item: loads x, y, z at the operand offsets (`mixed_load`), stores out[i]
fn item(i: u32) {
  let o = operand_offsets(i);
$loads$store}
// ==== mixed_load: `cast` is f32 (float tensors), i32 (x compared with an int scalar) or empty
  let $var = $cast($operand[o.$lane]);
// ==== mixed_store_float
  out[i] = elem($expr);
// ==== mixed_store
  out[i] = $expr;
// ==== value_at_float: a fill (step 0) stores start itself: -0.0 + 0.0 would be +0.0
fn value_at(i: u32) -> elem {
  return elem(select(params.a + f32(i) * params.b, params.a, params.b == 0.0));
}
// ==== value_at_int
fn value_at(i: u32) -> i32 {
  return params.n + i32(i) * params.m;
}
// ==== value_at_bool
fn value_at(i: u32) -> u32 {
  return u32(params.n != 0i);
}
// ==== nonzero_float: NaN counts as nonzero
fn nonzero(v: elem) -> bool {
  return f32(v) != 0.0 || is_nan(f32(v));
}
// ==== nonzero_int
fn nonzero(v: i32) -> bool {
  return v != 0i;
}
// ==== nonzero_bool
fn nonzero(v: u32) -> bool {
  return v != 0u;
}
// ==== chain_unary: step j of a fused chain, a unary table row's expression of v
fn step$j(v: f32) -> f32 {
  return $expr;
}
// ==== chain_binary: a binary table row's expression of x and y
fn step$j(x: f32, y: f32) -> f32 {
  return $expr;
}
// ==== chain_value: the steps over inputs r0 .., each result rounded to elem (also matmul's gated prologue)
fn chain_value($inputs) -> f32 {
$lines  return r$last;
}
// ==== chain_item: the inputs loaded, the chain's value stored
fn chain_item(i: u32) {
$loads  y[i] = elem(chain_value($regs));
}
// ==== chain_load
  let r$reg = f32($input[i]);
// ==== chain_unary_call
  let r$reg = f32(elem(step$j(r$a)));
// ==== chain_binary_call
  let r$reg = f32(elem(step$j(r$a, r$b)));
