// Elementwise binary ops with NumPy broadcasting: out = a OP (alpha * b).
// One invocation per output element; the flat index is rebuilt from a grid
// that may be folded into two dimensions for large tensors.

override wg_size: u32 = 256;
override op: u32 = 0u;  // 0 add, 1 sub, 2 mul, 3 div

const MAX_RANK = 8u;

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

@compute @workgroup_size(wg_size)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * wg_size;
  if (i >= params.numel) {
    return;
  }
  if (params.same_shape == 1u) {
    out[i] = combine(a[i], b[i]);
    return;
  }
  var rest = i;
  var ia = 0u;
  var ib = 0u;
  for (var d = params.rank; d > 0u; d -= 1u) {
    let size = at(params.out_shape, d - 1u);
    let coord = rest % size;
    rest = rest / size;
    ia += coord * at(params.a_strides, d - 1u);
    ib += coord * at(params.b_strides, d - 1u);
  }
  out[i] = combine(a[ia], b[ib]);
}
