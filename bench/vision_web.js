// `pte-webgpu bench --vision --backend browser`: the same image model as ONNX run by ONNX
// Runtime Web in the same page as ours (web/harness.html, Pyodide), on the same adapter.
// Served by bench/vision_browser.py: /ort/ (onnxruntime-web/dist), /job/ (the model files,
// input.bin: the float32 image both sides are fed).
// spec: {build: "jsep" | "webgpu-ep", modelUrl, inputUrl, dims, runs, warmup, minSampleMs}
// Timed as ours (bench/vision_job.py): warm-up runs, then `runs` samples, each `group` images
// one after another (image in from a CPU tensor, the output back in a CPU tensor, each run
// awaited), divided by `group`; group makes a sample last minSampleMs at least (the page's
// performance.now() steps by 0.1 ms). JSEP also gives its kernels' GPU time for one run
// (its profiler: timestamps around each kernel) where the adapter has timestamp queries.

import { kernelTimes, loadOrt } from "./ort_common.js";

const now = () => performance.now();

function base64(bytes) {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode.apply(null, bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
}

export async function benchOrtVision(spec) {
  const file = spec.build === "jsep" ? "ort.mjs" : "ort.webgpu.mjs";
  const ort = await loadOrt(file);
  let t0 = now();
  const session = await ort.InferenceSession.create(spec.modelUrl, {
    executionProviders: ["webgpu"], graphOptimizationLevel: "all" });
  const loadMs = now() - t0;
  const image = new Float32Array(await (await fetch(spec.inputUrl)).arrayBuffer());
  const [inputName] = session.inputNames, [outputName] = session.outputNames;
  let last = null;
  const run = async () => {
    const out = await session.run({ [inputName]: new ort.Tensor("float32", image, spec.dims) });
    last = out[outputName];
  };
  t0 = now();
  for (let i = 0; i < Math.max(1, spec.warmup); i++) await run();
  const one = (now() - t0) / Math.max(1, spec.warmup);
  const group = Math.max(1, Math.ceil(spec.minSampleMs / Math.max(one, 1e-3)));
  const ms = [];
  for (let r = 0; r < spec.runs; r++) {
    t0 = now();
    for (let i = 0; i < group; i++) await run();
    ms.push((now() - t0) / group);
  }
  const data = last.data;  // a CPU tensor: its Float32Array
  const output = { shape: [...last.dims], dtype: last.type,
    b64: base64(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)) };
  let profile = null;
  if (spec.build === "jsep") {
    profile = await kernelTimes(ort, run, 1000).catch((e) => `profile failed: ${e}`);
    if (Array.isArray(profile)) profile.sort((a, b) => b.us - a.us);
  }
  await session.release();
  return { ms, group, load_ms: loadMs, output, profile, version: ort.env.versions?.web ?? "?",
    build: spec.build };
}

window.benchOrtVision = benchOrtVision;
