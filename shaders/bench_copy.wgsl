// The copy kernel the benchmarks measure ours against (bench/gpu_bench.py, matmul_gpu.py):
// vec4 loads and stores, `per` vec4s per invocation, on a folded grid. No op uses it.
override wg_size: u32 = 256;
override per: u32 = 1;   // vec4s per invocation, wg_size apart
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(wg_size)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let first = (wid.x + wid.y * groups.x) * wg_size * per + li;
  let n = arrayLength(&dst);
  for (var k = 0u; k < per; k++) {
    let i = first + k * wg_size;
    if (i < n) { dst[i] = src[i]; }
  }
}
