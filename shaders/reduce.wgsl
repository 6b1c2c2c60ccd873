// Reductions along lines: one workgroup per output line, lanes stride over the
// line's R elements, a shared-memory halving tree combines their partials.
// A line's base offset comes from the kept dims, an element's offset within the
// line from the reduced dims, so any set of dims (any strides) works; the host
// merges adjacent dims first so the common cases cost one div/mod per element.
// Lines beyond one grid dimension fold into y.

// Prelude (Params, bindings): shaders/compose.py from ops/reduce.py. Maxima propagate
// NaN (max_nan), as torch.

override wg_size: u32 = 64;  // a power of two, <= 256
override op: u32 = 0u;  // 0 mean, 1 softmax

const SOFTMAX = 1u;

// Offset of the i-th point of a row-major box of `rank` dims with the given strides.
fn offset_of(i: u32, rank: u32, shape: array<vec4<u32>, 2>,
             strides: array<vec4<u32>, 2>) -> u32 {
  var rest = i;
  var off = 0u;
  for (var d = rank; d > 0u; d -= 1u) {
    let size = at(shape, d - 1u);
    off += (rest % size) * at(strides, d - 1u);
    rest = rest / size;
  }
  return off;
}

fn element(base: u32, j: u32) -> u32 {
  return base + offset_of(j, params.red_rank, params.red_shape, params.red_strides);
}

// The line's mean: lane 0 writes one value.
fn mean(line: u32, base: u32, lane: u32) {
  var sum = 0.0;
  for (var j = lane; j < params.r; j += wg_size) {
    sum += f32(x[element(base, j)]);
  }
  let total = tree(lane, wg_size, sum, false);
  if (lane == 0u) {
    y[line] = elem(total / f32(params.r));
  }
}

// Softmax along the line, written in place of its elements: subtract the line's
// max before exp, so large logits neither overflow nor lose the small terms.
fn softmax(base: u32, lane: u32) {
  var top = f32(x[element(base, 0u)]);  // every line has an element 0: a safe identity
  for (var j = lane; j < params.r; j += wg_size) {
    top = max_nan(top, f32(x[element(base, j)]));
  }
  let line_max = tree(lane, wg_size, top, true);
  var sum = 0.0;
  for (var j = lane; j < params.r; j += wg_size) {
    sum += exp(f32(x[element(base, j)]) - line_max);
  }
  let total = tree(lane, wg_size, sum, false);
  for (var j = lane; j < params.r; j += wg_size) {
    let o = element(base, j);
    y[o] = elem(exp(f32(x[o]) - line_max) / total);
  }
}

// Entry point main (generated): one workgroup per line.
fn tree_line(line: u32, lane: u32) {
  let base = offset_of(line, params.kept_rank, params.kept_shape, params.kept_strides);
  if (op == SOFTMAX) {
    softmax(base, lane);
  } else {
    mean(line, base, lane);
  }
}

// The "lines" form: one whole line per invocation, no workgroup memory and no
// barrier (ops/reduce.py picks it on CPU adapters, where barriers cost most).
// Entry point lines (generated): whole_line(line) for each line.
fn whole_line(line: u32) {
  let base = offset_of(line, params.kept_rank, params.kept_shape, params.kept_strides);
  if (op != SOFTMAX) {
    var sum = 0.0;
    for (var j = 0u; j < params.r; j++) {
      sum += f32(x[element(base, j)]);
    }
    y[line] = elem(sum / f32(params.r));
    return;
  }
  var top = f32(x[element(base, 0u)]);
  for (var j = 1u; j < params.r; j++) {
    top = max_nan(top, f32(x[element(base, j)]));
  }
  var sum = 0.0;
  for (var j = 0u; j < params.r; j++) {
    sum += exp(f32(x[element(base, j)]) - top);
  }
  for (var j = 0u; j < params.r; j++) {
    let o = element(base, j);
    y[o] = elem(exp(f32(x[o]) - top) / sum);
  }
}
