// Elementwise binary ops with NumPy broadcasting: out = a OP (alpha * b).
// One invocation per output element; the flat index is rebuilt from a grid
// that may be folded into two dimensions for large tensors. Operands are read
// through strides over out's coordinates (0 on broadcast dims), so the same
// index math also serves `gather`: out = a read through any strides (a permute).

// The shader also has an f16 form (registry.shader_source): storage arrays and `elem`
// become f16; reads convert to f32, so the arithmetic stays f32.
alias elem = f32;

override wg_size: u32 = 256;
override op: u32 = 0u;  // 0 add, 1 sub, 2 mul, 3 div

struct Params {
  numel: u32,
  rank: u32,
  alpha: f32,
  same_shape: u32,  // 1 when a, b and out share one shape: skip index math
  out_shape: array<vec4<u32>, 2>,
  a_strides: array<vec4<u32>, 2>,  // 0 on broadcast dimensions
  b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

fn at(v: array<vec4<u32>, 2>, d: u32) -> u32 {
  return v[d / 4u][d % 4u];
}

fn combine(x: f32, y: f32) -> f32 {
  switch op {
    case 1u: { return x - params.alpha * y; }
    case 2u: { return x * y; }
    case 3u: { return x / y; }
    default: { return x + params.alpha * y; }
  }
}

fn flat_index(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
  return gid.x + gid.y * groups.x * wg_size;
}

// Offsets of output element i in a and in b.
fn operand_offsets(i: u32) -> vec2<u32> {
  var rest = i;
  var offsets = vec2<u32>(0u, 0u);
  for (var d = params.rank; d > 0u; d -= 1u) {
    let size = at(params.out_shape, d - 1u);
    let coord = rest % size;
    rest = rest / size;
    offsets += coord * vec2<u32>(at(params.a_strides, d - 1u), at(params.b_strides, d - 1u));
  }
  return offsets;
}

@compute @workgroup_size(wg_size)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat_index(gid, groups);
  if (i >= params.numel) {
    return;
  }
  if (params.same_shape == 1u) {
    out[i] = elem(combine(f32(a[i]), f32(b[i])));
    return;
  }
  let o = operand_offsets(i);
  out[i] = elem(combine(f32(a[o.x]), f32(b[o.y])));
}

// out[i] = a[offset of i through a_strides]; binds a, out and params only.
@compute @workgroup_size(wg_size)
fn gather(@builtin(global_invocation_id) gid: vec3<u32>,
          @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat_index(gid, groups);
  if (i < params.numel) {
    out[i] = a[operand_offsets(i).x];
  }
}
