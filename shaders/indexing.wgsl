// Element gathers, one invocation per output element (bound shapes; padded layout).
// Entry `take`: out[o, r, c] = src[o, idx[r], c] (aten.index.Tensor along one dim; a
// negative index counts from the end, one outside the dim gives 0 where torch raises).
// Entry `strided`: out[o, j, c] = src[o, start + j * step, c] (slice_copy, select_copy);
// start is read at execute from `ints`, so SymInt bounds and index -1 of a dynamic dim
// need no new recording.
alias elem = f32;

override wg_size: u32 = 64;

struct Params {
  numel: u32,
  inner: u32,    // elements after the indexed dim
  out_len: u32,  // the output's size along it
  in_len: u32,   // the source's (bound) size along it
  step: u32,
  start_slot: u32,
  _pad0: u32,
  _pad1: u32,
}

@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read> idx: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> ints: array<i32>;
@group(0) @binding(4) var<uniform> params: Params;

fn flat(gid: vec3<u32>, groups: vec3<u32>) -> u32 {
  return gid.x + gid.y * groups.x * wg_size;
}

fn read_at(o: u32, row: i32, c: u32) -> elem {
  if (row < 0 || u32(row) >= params.in_len) {
    return elem(0.0);
  }
  return src[(o * params.in_len + u32(row)) * params.inner + c];
}

@compute @workgroup_size(wg_size)
fn take(@builtin(global_invocation_id) gid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat(gid, groups);
  if (i >= params.numel) {
    return;
  }
  let c = i % params.inner;
  let t = i / params.inner;
  let r = t % params.out_len;
  var row = idx[r];
  if (row < 0) {
    row += i32(params.in_len);
  }
  out[i] = read_at(t / params.out_len, row, c);
}

@compute @workgroup_size(wg_size)
fn strided(@builtin(global_invocation_id) gid: vec3<u32>,
           @builtin(num_workgroups) groups: vec3<u32>) {
  let i = flat(gid, groups);
  if (i >= params.numel) {
    return;
  }
  let c = i % params.inner;
  let t = i / params.inner;
  let j = t % params.out_len;
  out[i] = read_at(t / params.out_len, ints[params.start_slot] + i32(j * params.step), c);
}
