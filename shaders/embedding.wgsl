// aten.embedding: out[r, c] = weight[indices[r], c] for each of the `rows` indices
// (any index shape, flattened) and each of the `dim` columns; one invocation per
// output element, the flat index rebuilt from a grid that may be folded into two
// dimensions. An index outside [0, vocab) writes a row of zeros and sets the flag
// (runtime/id_checks.py): its column-0 invocation counts it, and the first to claim the
// flag records its position and value; execute then raises, as torch does.

// The shader also has an f16 form (registry.shader_source): the weight, the output
// and `elem` become f16; the indices stay i32 (int64 tensors are held as int32).
alias elem = f32;

override wg_size: u32 = 256;

struct Params {
  numel: u32,  // rows * dim
  dim: u32,
  vocab: u32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read> weight: array<f32>;
@group(0) @binding(1) var<storage, read> indices: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;
@group(0) @binding(4) var<storage, read_write> flag: array<atomic<u32>, 4>;  // count, claimed, position, value

@compute @workgroup_size(wg_size)
fn main(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = gid.x + gid.y * groups.x * wg_size;
  if (i >= params.numel) {
    return;
  }
  let row = i / params.dim;
  let col = i - row * params.dim;
  let index = indices[row];
  var value = 0.0;
  if (index >= 0 && u32(index) < params.vocab) {
    value = f32(weight[u32(index) * params.dim + col]);
  } else if (col == 0u) {
    atomicAdd(&flag[0], 1u);
    if (atomicExchange(&flag[1], 1u) == 0u) {
      atomicStore(&flag[2], row);
      atomicStore(&flag[3], bitcast<u32>(index));
    }
  }
  out[i] = elem(value);
}
