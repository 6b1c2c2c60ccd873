// Benchmark-only JavaScript for `pte-webgpu bench` (web/bench.html loads it):
//   benchJs  - our rms_norm WGSL dispatched from plain JS (no Python in the loop)
//   benchOrt - ONNX Runtime Web's SimplifiedLayerNormalization on GPU-resident tensors,
//              JSEP build (ort.mjs) or WebGPU-EP build (ort.webgpu.mjs)
// Both time like bench/gpu_bench.py: warm-up, then wall time over many ops after one
// wait, and GPU timestamps where available (ours: one pass per op; JSEP: its profiler).

import { loadOrt } from "./ort_common.js";

const TARGET_S = 0.25;
const median = (a) => { const s = [...a].sort((p, q) => p - q); const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

function randomFloats(n, seed) {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) { s = (s * 1664525 + 1013904223) >>> 0; out[i] = (s / 2 ** 32) * 4 - 2; }
  return out;
}

async function device(features) {
  const adapter = await navigator.gpu.requestAdapter({ powerPreference: "high-performance" });
  const names = ["maxStorageBufferBindingSize", "maxBufferSize", "maxComputeInvocationsPerWorkgroup",
    "maxComputeWorkgroupSizeX", "maxComputeWorkgroupStorageSize"];
  const requiredLimits = Object.fromEntries(names.map((n) => [n, adapter.limits[n]]));
  return adapter.requestDevice({ requiredLimits,
    requiredFeatures: features.filter((f) => adapter.features.has(f)) });
}

function fold(groups, maxDim) {
  if (groups <= maxDim) return [Math.max(groups, 1), 1, 1];
  const x = Math.min(maxDim, Math.floor(Math.sqrt(groups - 1)) + 1);
  return [x, Math.ceil(groups / x), 1];
}

async function timeSteps(dev, encodeOne) {
  const hasTs = dev.features.has("timestamp-query");
  const wall = async (n) => {
    const t0 = performance.now();
    const enc = dev.createCommandEncoder();
    for (let i = 0; i < n; i++) encodeOne(enc, null, i);
    dev.queue.submit([enc.finish()]);
    await dev.queue.onSubmittedWorkDone();
    return (performance.now() - t0) / 1e3;
  };
  let one = await wall(1);
  one = Math.min(one, (await wall(3)) / 3);
  const iters = Math.floor(Math.max(5, Math.min(1000, TARGET_S / Math.max(one, 1e-7))));
  const walls = [];
  for (let r = 0; r < 3; r++) walls.push((await wall(iters)) / iters);
  const rec = { wall_us: median(walls) * 1e6, iters };
  if (hasTs) {
    const n = Math.min(iters, 500);
    const qs = dev.createQuerySet({ type: "timestamp", count: 2 * n });
    const res = dev.createBuffer({ size: 16 * n, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
    const out = dev.createBuffer({ size: 16 * n, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = dev.createCommandEncoder();
    for (let i = 0; i < n; i++) encodeOne(enc, qs, i);
    enc.resolveQuerySet(qs, 0, 2 * n, res, 0);
    enc.copyBufferToBuffer(res, 0, out, 0, 16 * n);
    dev.queue.submit([enc.finish()]);
    await out.mapAsync(GPUMapMode.READ);
    const v = new BigUint64Array(out.getMappedRange());
    const ns = [];
    for (let i = 0; i < n; i++) ns.push(Number(v[2 * i + 1] - v[2 * i]));
    out.unmap(); out.destroy(); res.destroy(); qs.destroy();
    rec.ts_us = median(ns) / 1e3;
  }
  rec.us = rec.ts_us ?? rec.wall_us;
  rec.timing = rec.ts_us !== undefined ? "timestamps" : "wall";
  return rec;
}

let jsDevice = null;

// spec: {wgsl, entry, constants, workgroups, rows, width, eps}
export async function benchJs(spec) {
  jsDevice ??= await device(["timestamp-query", "subgroups"]);
  const dev = jsDevice;
  const n = spec.rows * spec.width;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
  const x = dev.createBuffer({ size: 4 * n, usage });
  const w = dev.createBuffer({ size: 4 * spec.width, usage });
  const y = dev.createBuffer({ size: 4 * n, usage });
  const params = dev.createBuffer({ size: 16, usage: GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST });
  // binding 4: rare-row flags (ops/rms_norm.py; only the split form writes them, and its
  // second dispatch is not timed here: spec.dispatches says how many the op has)
  const flags = dev.createBuffer({ size: 4 * spec.rows, usage });
  const chunk = randomFloats(Math.min(n, 1 << 20), 1);
  for (let off = 0; off < n; off += chunk.length) dev.queue.writeBuffer(x, 4 * off, chunk, 0, Math.min(chunk.length, n - off));
  dev.queue.writeBuffer(w, 0, randomFloats(spec.width, 2));
  const p = new DataView(new ArrayBuffer(16));
  p.setUint32(0, spec.rows, true); p.setUint32(4, spec.width, true); p.setFloat32(8, spec.eps, true);
  dev.queue.writeBuffer(params, 0, p.buffer);
  const module = dev.createShaderModule({ code: spec.wgsl });
  const pipeline = await dev.createComputePipelineAsync({ layout: "auto",
    compute: { module, entryPoint: spec.entry, constants: spec.constants } });
  const group = dev.createBindGroup({ layout: pipeline.getBindGroupLayout(0), entries: [
    { binding: 0, resource: { buffer: x } }, { binding: 1, resource: { buffer: w } },
    { binding: 2, resource: { buffer: y } }, { binding: 3, resource: { buffer: params } },
    { binding: 4, resource: { buffer: flags } }] });
  const grid = fold(spec.workgroups, dev.limits.maxComputeWorkgroupsPerDimension);
  const rec = await timeSteps(dev, (enc, qs, i) => {
    const pass = enc.beginComputePass(qs ? { timestampWrites: { querySet: qs,
      beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 } } : {});
    pass.setPipeline(pipeline); pass.setBindGroup(0, group); pass.dispatchWorkgroups(...grid); pass.end();
  });
  for (const b of [x, w, y, params, flags]) b.destroy();
  return rec;
}

// spec: {build: "jsep" | "webgpu-ep", modelUrl, rows, width}
export async function benchOrt(spec) {
  const file = spec.build === "jsep" ? "ort.mjs" : "ort.webgpu.mjs";
  const ort = await loadOrt(file);
  const model = new Uint8Array(await (await fetch(spec.modelUrl)).arrayBuffer());
  const session = await ort.InferenceSession.create(model, {
    executionProviders: ["webgpu"], preferredOutputLocation: "gpu-buffer",
    graphOptimizationLevel: "all" });
  const dev = await ort.env.webgpu.device;
  const n = spec.rows * spec.width;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
  const xb = dev.createBuffer({ size: 4 * n, usage });
  const yb = dev.createBuffer({ size: 4 * n, usage });
  const chunk = randomFloats(Math.min(n, 1 << 20), 1);
  for (let off = 0; off < n; off += chunk.length) dev.queue.writeBuffer(xb, 4 * off, chunk, 0, Math.min(chunk.length, n - off));
  const dims = [spec.rows, spec.width];
  const feeds = { x: ort.Tensor.fromGpuBuffer(xb, { dataType: "float32", dims }) };
  const fetches = { y: ort.Tensor.fromGpuBuffer(yb, { dataType: "float32", dims }) };
  const runs = async (k) => {
    const t0 = performance.now();
    for (let i = 0; i < k; i++) await session.run(feeds, fetches);
    await dev.queue.onSubmittedWorkDone();
    return (performance.now() - t0) / 1e3;
  };
  let one = await runs(1);
  one = Math.min(one, (await runs(3)) / 3);
  const iters = Math.floor(Math.max(5, Math.min(1000, TARGET_S / Math.max(one, 1e-7))));
  const walls = [];
  for (let r = 0; r < 3; r++) walls.push((await runs(iters)) / iters);
  const rec = { wall_us: median(walls) * 1e6, iters };
  if (spec.build === "jsep" && dev.features.has("timestamp-query")) {
    // JSEP's profiler: each kernel in its own pass with timestamp writes.
    const ns = [];
    ort.env.webgpu.profiling = { mode: "default",
      ondata: (d) => { if (/LayerNorm/i.test(d.kernelType)) ns.push(Number(d.endTime - d.startTime)); } };
    try {
      await runs(Math.min(iters, 200));
      await runs(1);  // profile data arrives with the next flush
    } finally {
      ort.env.webgpu.profiling = { mode: "off" };
    }
    if (ns.length) rec.ts_us = median(ns) / 1e3;
    rec.kernels = ns.length;
  }
  rec.us = rec.ts_us ?? rec.wall_us;
  rec.timing = rec.ts_us !== undefined ? "timestamps" : "wall";
  await session.release();
  xb.destroy(); yb.destroy();
  return rec;
}

window.benchJs = benchJs;
window.benchOrt = benchOrt;
