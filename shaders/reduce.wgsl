// Reductions along lines: one workgroup per output line, lanes stride over the
// line's R elements, a shared-memory halving tree combines their partials.
// A line's base offset comes from the kept dims, an element's offset within the
// line from the reduced dims, so any set of dims (any strides) works; the host
// merges adjacent dims first so the common cases cost one div/mod per element.
// Lines beyond one grid dimension fold into y.

// Prelude (Params, bindings): shaders/compose.py from ops/reduce.py. Maxima propagate
// NaN (max_nan), as torch.

override wg_size: u32 = 64;  // a power of two, <= 256
override op: u32 = 0u;  // ops/reduce.py's codes: 0 mean, 1 softmax, 2 sum, 3 amax, 4 amin,
                         // 5 log_softmax

const SOFTMAX = 1u;
const SUM = 2u;
const AMAX = 3u;
const AMIN = 4u;
const LOG_SOFTMAX = 5u;

// amin is -amax(-x): one NaN-propagating max tree serves both.
fn load(o: u32) -> f32 {
  let v = f32(x[o]);
  return select(v, -v, op == AMIN);
}

fn takes_max() -> bool {
  return op == AMAX || op == AMIN;
}

// The line's value from the tree's total (a sum, or the max of the loaded values).
fn finish(total: f32) -> f32 {
  switch op {
    case 0u: { return total / f32(params.r); }
    case 4u: { return -total; }
    default: { return total; }
  }
}

// softmax's exp(v - top) / sum, or log_softmax's (v - top) - log(sum), as torch.
fn normalized(v: f32, top: f32, sum: f32) -> f32 {
  if (op == LOG_SOFTMAX) {
    return (v - top) - log(sum);
  }
  return exp(v - top) / sum;
}

fn element(base: u32, j: u32) -> u32 {
  return base + offset_of(j, params.red_rank, params.red_shape, params.red_strides);
}

// The line's mean, sum, amax or amin: lane 0 writes one value. A max starts from
// element 0 (every line has one: a safe identity for lanes past the end).
fn one_value(line: u32, base: u32, lane: u32) {
  var acc = select(0.0, load(element(base, 0u)), takes_max());
  for (var j = lane; j < params.r; j += wg_size) {
    let v = load(element(base, j));
    acc = select(acc + v, max_nan(acc, v), takes_max());
  }
  let total = tree(lane, wg_size, acc, takes_max());
  if (lane == 0u) {
    y[line] = elem(finish(total));
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
    y[o] = elem(normalized(f32(x[o]), line_max, total));
  }
}

// Entry point main (generated): one workgroup per line.
fn tree_line(line: u32, lane: u32) {
  let base = offset_of(line, params.kept_rank, params.kept_shape, params.kept_strides);
  if (op == SOFTMAX || op == LOG_SOFTMAX) {
    softmax(base, lane);
  } else {
    one_value(line, base, lane);
  }
}

// The "lines" form: one whole line per invocation, no workgroup memory and no
// barrier (ops/reduce.py picks it on CPU adapters, where barriers cost most).
// Entry point lines (generated): whole_line(line) for each line.
fn whole_line(line: u32) {
  let base = offset_of(line, params.kept_rank, params.kept_shape, params.kept_strides);
  if (op != SOFTMAX && op != LOG_SOFTMAX) {
    var acc = load(element(base, 0u));
    for (var j = 1u; j < params.r; j++) {
      let v = load(element(base, j));
      acc = select(acc + v, max_nan(acc, v), takes_max());
    }
    y[line] = elem(finish(acc));
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
    y[o] = elem(normalized(f32(x[o]), top, sum));
  }
}
