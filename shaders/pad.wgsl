// Padding (aten.constant_pad_nd): one output element per invocation over up to 8 dims.
// Output coordinate o of dim d reads input o - before[d] (before[d] < 0 is held mod 2^32,
// so the u32 subtraction wraps the same way); a coordinate outside the input takes
// params.value.
//
// Prelude (Params, bindings): shaders/compose.py from ops/pad.py.

override wg_size: u32 = 256;

// Entry point main (generated): pad_item(i) for each output element.
fn pad_item(i: u32) {
  var rest = i;
  var src = 0u;
  var inside = true;
  for (var d = params.rank; d > 0u; d -= 1u) {
    let size = at(params.shape, d - 1u);
    let c = rest % size - at(params.before, d - 1u);  // wraps below 0
    rest = rest / size;
    inside = inside && c < at(params.in_shape, d - 1u);
    src += c * at(params.in_strides, d - 1u);
  }
  if (inside) {
    y[i] = x[src];
  } else {
    y[i] = elem(params.value);
  }
}
