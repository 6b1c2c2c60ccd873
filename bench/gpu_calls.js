// Logs WebGPU calls in a page (bench/encode_browser.py, tests/browser/test_js_replay.py):
// every method of the GPU* interfaces is wrapped; while `gpuLog.on`, each call is counted
// as made from the one-call JS encode (gpu/js_replay.py's pteEncodeRecording is on the
// stack) or from Python, and encoder calls are logged with their arguments (objects by
// identity). `gpuLog.restore()` puts the originals back.
(() => {
  const ids = new WeakMap();
  let next = 0;
  const show = (v) => (v !== null && typeof v === "object")
    ? "#" + (ids.get(v) ?? (ids.set(v, ++next), next)) : String(v);
  const log = { on: false, calls: [], fromPython: 0, fromEncode: 0, originals: [] };
  log.clear = () => { log.calls = []; log.fromPython = 0; log.fromEncode = 0; };
  for (const C of [GPUDevice, GPUQueue, GPUCommandEncoder, GPUComputePassEncoder, GPUBuffer]) {
    const logged = C === GPUCommandEncoder || C === GPUComputePassEncoder;
    for (const k of Object.getOwnPropertyNames(C.prototype)) {
      const d = Object.getOwnPropertyDescriptor(C.prototype, k);
      if (k === "constructor" || typeof d.value !== "function") continue;
      const f = d.value;
      log.originals.push([C.prototype, k, f]);
      C.prototype[k] = function (...a) {
        if (log.on) {
          if (new Error().stack.includes("pteEncodeRecording")) log.fromEncode++;
          else log.fromPython++;
          if (logged) log.calls.push(k + "(" + a.map(show).join(",") + ")");
        }
        return f.apply(this, a);
      };
    }
  }
  log.restore = () => { for (const [p, k, f] of log.originals) p[k] = f; };
  globalThis.gpuLog = log;
})();
