// Pyodide and pte_webgpu.app.webapp in a dedicated worker: the page's main thread only
// draws, so it never freezes while Python boots (seconds of WebAssembly and imports)
// or runs. WebGPU works in workers too (navigator.gpu).
//
// Page -> worker: {kind: "call", id, fn, args} runs webapp.<fn>(...args);
//                 {kind: "cancel"} asks a running page_run to stop after this execution.
// Worker -> page: {kind: "progress", stage, detail} during boot, then {kind: "booted"}
//                 or {kind: "boot-failed"}; {kind: "run-progress", id, done, total};
//                 {kind: "reply", id, reply} with webapp's {ok, result | error}.
import { bootPyodide } from "./boot.js";

const indexURL = new URL(self.location.href).searchParams.get("indexURL") ?? "/pyodide/";
let webapp = null;
let cancelRequested = false;

const ready = bootPyodide({
  indexURL,
  onProgress: (stage, detail) => postMessage({ kind: "progress", stage, detail }),
}).then((pyodide) => {
  webapp = pyodide.pyimport("pte_webgpu.app.webapp");
  const version = pyodide.runPython("import pte_webgpu; pte_webgpu.__version__");
  postMessage({ kind: "booted", pyodideVersion: pyodide.version, version });
}, (error) => {
  postMessage({ kind: "boot-failed", message: error.message, traceback: error.stack ?? "" });
  throw error;
});

async function call({ id, fn, args }) {
  await ready;
  const extra = [];
  if (fn === "page_run") {
    cancelRequested = false;
    extra.push((done, total) => postMessage({ kind: "run-progress", id, done, total }),
      () => cancelRequested);
  }
  let reply;
  try {
    const proxy = await webapp[fn](...args, ...extra);
    reply = proxy.toJs({ dict_converter: Object.fromEntries });
    proxy.destroy();
  } catch (error) { // webapp catches Python errors; this is Pyodide itself failing
    reply = { ok: false, error: { message: `internal error: ${error.message}`, traceback: error.stack ?? "" } };
  }
  postMessage({ kind: "reply", id, reply });
}

self.onmessage = ({ data }) => {
  if (data.kind === "cancel") cancelRequested = true;
  else if (data.kind === "call") call(data);
};
