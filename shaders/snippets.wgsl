// WGSL pieces kernels share; shaders/compose.py includes the ones a Kernel names.
// Each starts at a "// ==== name" line.

// ==== bits
// NaN and inf tests on the bits: compilers may fold float comparisons with NaN.
fn not_finite(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) >= 0x7f800000u;
}

fn is_nan(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// ==== nan_minmax
// torch.maximum / minimum: NaN if either is NaN (GPUs' max/min may drop it), else the
// larger (smaller); on a tie (+0 and -0) the first operand, as torch.
fn max_nan(p: f32, q: f32) -> f32 {
  if (is_nan(p)) { return p; }
  if (is_nan(q)) { return q; }
  return select(q, p, p >= q);
}

fn min_nan(p: f32, q: f32) -> f32 {
  if (is_nan(p)) { return p; }
  if (is_nan(q)) { return q; }
  return select(q, p, p <= q);
}

// ==== flat_index
// One invocation per item on a grid that may be folded into two dimensions
// (gpu/interface.py fold_grid); needs `override wg_size`.
fn flat_index(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
  return gid.x + gid.y * groups.x * wg_size;
}

// The index of this workgroup on a folded grid.
fn group_index(wid: vec3<u32>, groups: vec3<u32>) -> u32 {
  return wid.x + wid.y * groups.x;
}

// ==== shape_index
// Element d of an array<vec4<u32>, 2> (a shape or strides of up to 8 dims).
fn at(v: array<vec4<u32>, 2>, d: u32) -> u32 {
  return v[d / 4u][d % 4u];
}

// ==== tree
var<workgroup> partial: array<f32, wg_size>;

// The sum (the NaN-propagating max when take_max) of `value` over each run of `width`
// lanes (a power of two dividing wg_size), by a halving tree in workgroup memory.
// Every invocation of the workgroup must call it (barriers); each gets its run's total.
fn tree(lane: u32, width: u32, value: f32, take_max: bool) -> f32 {
  partial[lane] = value;
  workgroupBarrier();
  let sub = lane % width;
  for (var stride = width / 2u; stride > 0u; stride /= 2u) {
    if (sub < stride) {
      let other = partial[lane + stride];
      if (take_max) {
        partial[lane] = max_nan(partial[lane], other);
      } else {
        partial[lane] += other;
      }
    }
    workgroupBarrier();
  }
  let total = partial[lane - sub];
  workgroupBarrier();  // partial is reused by the next call
  return total;
}
