// The index of the largest value of one row, x[params.offset .. + params.width), written
// to out[0]: torch.argmax's order (NaN ranks above every number; among equal values,
// +0 and -0 included, the first index). Two dispatches: `main`, params.groups workgroups,
// each lane keeping the best of a strided slice of its workgroup's params.chunk elements,
// then a halving tree in workgroup memory, the workgroup's best into `best`; `finish`,
// one workgroup, the best of those. One workgroup over a 49152-token vocab took 77 µs on
// an H100: each lane waited on ~200 loads in turn. Greedy decoding reads back these 4
// bytes instead of the whole row of logits (runtime/readout.py).
// With params.temperature > 0 it samples instead: the index of the largest
// x / temperature + g, g Gumbel noise from a hash of (seed, draw, index), is a draw from
// softmax(x / temperature) (the Gumbel-max trick): one pass, no sort, nothing read back
// but the index. NaN still ranks first; -inf stays -inf.
override wg_size: u32 = 256;

var<workgroup> best_value: array<f32, wg_size>;
var<workgroup> best_index: array<u32, wg_size>;

// (v, i) ranks above (w, j). NaN by its bits: an adapter may fold comparisons with NaN.
fn ranks_above(v: f32, i: u32, w: f32, j: u32) -> bool {
  let v_nan = is_nan(v);
  let w_nan = is_nan(w);
  if (v_nan || w_nan) {
    return v_nan && (!w_nan || i < j);
  }
  let a = order_key(v);  // bits, not float compares: a flushing adapter would tie subnormals
  let b = order_key(w);
  if (a != b) {
    return a > b;
  }
  return i < j;
}

// A well-mixed 32-bit hash (a PCG output permutation): uniform bits from a counter.
fn mix(a: u32) -> u32 {
  let s = a * 747796405u + 2891336453u;
  let w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
  return (w >> 22u) ^ w;
}

// Gumbel(0, 1) noise for element j of draw `draw`: -log(-log(u)), u uniform in (0, 1).
fn gumbel(j: u32) -> f32 {
  let bits = mix(params.seed ^ mix(params.draw ^ mix(j)));
  let u = (f32(bits >> 8u) + 0.5) / 16777216.0;
  return -log(-log(u));
}

fn key(j: u32) -> f32 {
  let x_j = f32(x[params.offset + j]);
  if (params.temperature > 0.0) {
    return x_j / params.temperature + gumbel(j);
  }
  return x_j;
}

// Whether candidate (w, k) replaces the best so far (v, i): k an index, and i none yet or
// (w, k) ranks above it. 0xffffffff: no index.
fn takes(w: f32, k: u32, v: f32, i: u32) -> bool {
  return k != 0xffffffffu && (i == 0xffffffffu || ranks_above(w, k, v, i));
}

// The workgroup's lanes' (v, i) into their best at lane 0 (a halving tree; barriers).
fn best_of_lanes(lane: u32, v: f32, i: u32) {
  best_value[lane] = v;
  best_index[lane] = i;
  workgroupBarrier();
  for (var stride = wg_size / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      let w = best_value[lane + stride];
      let k = best_index[lane + stride];
      if (takes(w, k, best_value[lane], best_index[lane])) {
        best_value[lane] = w;
        best_index[lane] = k;
      }
    }
    workgroupBarrier();
  }
}

@compute @workgroup_size(wg_size)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lane: u32) {
  let lo = wid.x * params.chunk;
  let hi = min(lo + params.chunk, params.width);
  var v = -3.0e38;
  var i = 0xffffffffu;  // no index yet: any element ranks above
  for (var j = lo + lane; j < hi; j += wg_size) {
    let x_j = key(j);
    if (takes(x_j, j, v, i)) {
      v = x_j;
      i = j;
    }
  }
  best_of_lanes(lane, v, i);
  if (lane == 0u) {
    best[2u * wid.x] = bitcast<u32>(best_value[0]);
    best[2u * wid.x + 1u] = best_index[0];
  }
}

@compute @workgroup_size(wg_size)
fn finish(@builtin(local_invocation_index) lane: u32) {
  var v = -3.0e38;
  var i = 0xffffffffu;
  for (var g = lane; g < params.groups; g += wg_size) {
    let k = best[2u * g + 1u];
    let w = bitcast<f32>(best[2u * g]);
    if (takes(w, k, v, i)) {
      v = w;
      i = k;
    }
  }
  best_of_lanes(lane, v, i);
  if (lane == 0u) {
    out[0] = best_index[0];
  }
}
