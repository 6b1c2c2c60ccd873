// RMSNorm over the last dimension: y = x * inverseSqrt(mean(x^2) + eps) * weight.
// One workgroup per row; lanes stride over the row, then a shared-memory halving
// tree sums their partials. Rows beyond one grid dimension fold into y.

override wg_size: u32 = 64;  // a power of two, <= 256

struct Params {
  num_rows: u32,
  width: u32,
  eps: f32,
  _pad: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(3) var<uniform> params: Params;

var<workgroup> partial: array<f32, 256>;

@compute @workgroup_size(wg_size)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) lane: u32) {
  let row = wid.x + wid.y * groups.x;
  if (row >= params.num_rows) {
    return;  // uniform for the whole workgroup
  }
  let base = row * params.width;
  // Sum the squares in f32 as torch does: a row whose sum overflows gives inf,
  // rstd 0 and zeros, like the reference (tests/fixtures/extra/rmsnorm_overflow_*).
  var sum = 0.0;
  for (var j = lane; j < params.width; j += wg_size) {
    let v = x[base + j];
    sum += v * v;
  }
  partial[lane] = sum;
  workgroupBarrier();
  for (var stride = wg_size / 2u; stride > 0u; stride /= 2u) {
    if (lane < stride) {
      partial[lane] += partial[lane + stride];
    }
    workgroupBarrier();
  }
  let rstd = inverseSqrt(partial[0] / f32(params.width) + params.eps);
  for (var j = lane; j < params.width; j += wg_size) {
    y[base + j] = x[base + j] * rstd * weight[j];
  }
}
