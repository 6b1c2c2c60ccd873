// Benchmark-only JavaScript for bench/roundtrip.py, injected into the bench page.
//
// window.roundtripJs(job, n): n round trips of the same GPU work a loaded Method records,
// done from plain JS with the Method's own JS objects (pipelines, bind groups, buffers):
// writeBuffer each input, one encoder (dispatches share a compute pass, a copy ends it, as
// gpu/recording.pass_plan says), copy the outputs into the staging buffer, one submit, mapAsync,
// copy each output out of the mapped range, unmap. Returns the n times in ms
// (performance.now).
//
// job = { device, inputs: [[GPUBuffer, Uint8Array]], outputs: [[GPUBuffer, size]], staging,
//         steps: [{ kind: "dispatch", pipeline, bindGroup, grid } |
//                 { kind: "copy", src, dst, size }] }

const align4 = (n) => Math.max(4, (n + 3) & ~3);

function roundtripFn(job) {
  const { device, inputs, outputs, staging, steps } = job;
  const queue = device.queue;
  const offsets = [];
  let total = 0;
  for (const [, size] of outputs) { offsets.push(total); total += align4(size); }
  return async function once(marks) {
    for (const [buf, data] of inputs) queue.writeBuffer(buf, 0, data);
    const enc = device.createCommandEncoder();
    let pass = null;
    for (const s of steps) {
      if (s.kind === "copy") {
        if (pass) { pass.end(); pass = null; }
        enc.copyBufferToBuffer(s.src, 0, s.dst, 0, s.size);
        continue;
      }
      if (!pass) pass = enc.beginComputePass();
      pass.setPipeline(s.pipeline);
      pass.setBindGroup(0, s.bindGroup);
      pass.dispatchWorkgroups(s.grid[0], s.grid[1], s.grid[2]);
    }
    if (pass) pass.end();
    outputs.forEach(([buf, size], i) => enc.copyBufferToBuffer(buf, 0, staging, offsets[i], align4(size)));
    queue.submit([enc.finish()]);
    if (marks) marks.push(performance.now());
    await staging.mapAsync(GPUMapMode.READ, 0, total);
    const mapped = new Uint8Array(staging.getMappedRange(0, total));
    const out = outputs.map(([, size], i) => mapped.slice(offsets[i], offsets[i] + size));
    staging.unmap();
    return out;
  };
}

window.roundtripJs = async function roundtripJs(job, n) {
  const once = roundtripFn(job);
  const times = new Array(n);
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await once();
    times[i] = performance.now() - t0;
  }
  return times;
};

// The synchronous part of each round trip (inputs written ... submit), in ms.
window.roundtripJsSync = async function roundtripJsSync(job, n) {
  const once = roundtripFn(job);
  const times = new Array(n);
  for (let i = 0; i < n; i++) {
    const marks = [performance.now()];
    await once(marks);
    times[i] = marks[1] - marks[0];
  }
  return times;
};

// The same work once, returning the outputs (to check them against the Python run).
window.roundtripJsOnce = async (job) => roundtripFn(job)();

// performance.now's step in this page (Chromium coarsens it when not cross-origin isolated).
window.clockStepMs = function clockStepMs() {
  let best = Infinity;
  for (let k = 0; k < 50; k++) {
    const a = performance.now();
    let b = a;
    while (b === a) b = performance.now();
    best = Math.min(best, b - a);
  }
  return best;
};
