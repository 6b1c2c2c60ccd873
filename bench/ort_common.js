// ONNX Runtime Web for the benches' pages (bench_page.js, llm_web.js, vision_web.js), served at
// /ort/ (onnxruntime-web/dist): one module per build file, set up alike.

const modules = {};

// The build `file` (ort.mjs: JSEP; ort.webgpu.mjs: the WebGPU EP), imported once per page;
// its wasm from /ort/, one thread (no cross-origin isolation here: no wasm threads).
export async function loadOrt(file = "ort.mjs") {
  const ort = (modules[file] ??= await import(`/ort/${file}`));
  ort.env.wasm.wasmPaths = "/ort/";
  ort.env.wasm.numThreads = 1;
  ort.env.logLevel = "error";
  return ort;
}

// Per-kernel GPU time of `run()` (JSEP's profiler: timestamps around each kernel), summed per
// kernel type as ours' profile rows {op, us, dispatches}; null without timestamp queries or
// without records. The timestamps are mapped asynchronously: waits `settleMs` for them.
export async function kernelTimes(ort, run, settleMs = 2000) {
  const dev = await ort.env.webgpu.device;
  // JSEP asks for the inside-passes feature when the adapter has it, else timestamp-query
  if (!["chromium-experimental-timestamp-query-inside-passes", "timestamp-query"]
    .some((f) => dev.features.has(f))) return null;
  const rows = {};
  ort.env.webgpu.profiling = { mode: "default", ondata: (d) => {
    const row = (rows[d.kernelType] ??= { op: d.kernelType, us: 0, dispatches: 0 });
    row.us += Number(d.endTime - d.startTime) / 1e3;
    row.dispatches += 1;
  } };
  try {
    await run();
    await dev.queue.onSubmittedWorkDone();
    await new Promise((done) => setTimeout(done, settleMs));
  } finally {
    ort.env.webgpu.profiling = { mode: "off" };
  }
  const out = Object.values(rows);
  return out.length ? out : null;
}
