// The demo page's UI. Boots Pyodide, gathers files, and calls pte_webgpu.webapp:
// all parsing, GPU work and checking happen in Python; this file only moves bytes
// and shows results. window.pyodideReady / window.bootStages follow harness.html so
// pte_webgpu.chromium.session.BrowserSession can drive this page too.
import { bootPyodide } from "./boot.js";
import { renderGraph, renderResult } from "./render.js";

const $ = (id) => document.getElementById(id);
const STAGES = {
  "import-module": "Loading the Pyodide module…",
  "load-pyodide": "Starting Python (WebAssembly)…",
  "load-package": "Loading the pte-webgpu package…",
  ready: "Python ready",
};

const state = {
  webapp: null, // PyProxy of the pte_webgpu.webapp module
  pte: null, // {name, bytes}
  ptd: [], // [[name, bytes], ...]
  inputs: null, // {name, bytes} of an .npy/.npz, or null for random inputs
  refusal: null, // why this runtime cannot run the program (its unsupported ops), or null
  busy: false,
};

// --- boot ---------------------------------------------------------------------------
const bootStarted = performance.now();
const elapsed = () => ((performance.now() - bootStarted) / 1000).toFixed(1) + " s";
const ticker = setInterval(() => ($("boot-elapsed").textContent = elapsed()), 100);
window.bootStages = [];

const ready = bootPyodide({
  indexURL: new URLSearchParams(location.search).get("indexURL") ?? "/pyodide/",
  onProgress(stage, detail) {
    window.bootStages.push({ stage, ...detail });
    $("boot-stage").textContent = STAGES[stage] ?? stage;
  },
}).then(async (pyodide) => {
  window.pyodide = pyodide;
  state.webapp = pyodide.pyimport("pte_webgpu.webapp");
  const version = pyodide.runPython("import pte_webgpu; pte_webgpu.__version__");
  finishBoot("ready", `Ready: Pyodide ${pyodide.version}, pte-webgpu ${version}, in ${elapsed()}`);
  const adapter = await callPython("page_adapter");
  if (adapter) $("adapter").textContent = `WebGPU adapter: ${adapter.summary}`;
  updateButtons();
  return pyodide;
});
window.pyodideReady = ready;
ready.catch((error) => {
  finishBoot("failed", `Python failed to start after ${elapsed()}`);
  showError("Python failed to start", { message: error.message, traceback: error.stack ?? "" });
});

function finishBoot(status, text) {
  clearInterval(ticker);
  $("boot-status").dataset.state = status;
  $("boot-stage").textContent = text;
  $("boot-elapsed").textContent = "";
}

// --- calling Python -------------------------------------------------------------------
/** Calls webapp.<name>(...args); returns its result, or shows its error and returns null. */
async function callPython(name, ...args) {
  let reply;
  try {
    const proxy = await state.webapp[name](...args);
    reply = proxy.toJs({ dict_converter: Object.fromEntries });
    proxy.destroy();
  } catch (error) { // webapp catches Python errors; this is Pyodide itself failing
    reply = { ok: false, error: { message: `internal error: ${error.message}`, traceback: error.stack ?? "" } };
  }
  if (reply.ok) return reply.result;
  showError(ERROR_TITLES[name] ?? "Error", reply.error);
  return null;
}
const ERROR_TITLES = {
  page_describe: "Could not read the program",
  page_run: "The run failed",
  page_adapter: "No WebGPU device",
};

function showError(title, error) {
  $("error-title").textContent = title;
  $("error-message").textContent = error.message;
  $("error-traceback").textContent = error.traceback;
  $("error-details").open = false;
  $("error-box").hidden = false;
}
const clearError = () => ($("error-box").hidden = true);

// --- files -----------------------------------------------------------------------------
const readFile = async (file) => new Uint8Array(await file.arrayBuffer());
const extension = (name) => name.slice(name.lastIndexOf(".")).toLowerCase();

async function addFiles(files) {
  clearError();
  $("graph-section").hidden = true;
  files = [...files];
  const unknown = files.filter((f) => ![".pte", ".ptd", ".npy", ".npz"].includes(extension(f.name)));
  if (unknown.length) {
    showError("Unrecognized file", { message: `${unknown.map((f) => f.name).join(", ")}: expected .pte, .ptd, .npy or .npz files`, traceback: "" });
    return;
  }
  const pte = files.find((f) => extension(f.name) === ".pte");
  if (pte) setProgram({ name: pte.name, bytes: await readFile(pte) }, []);
  for (const f of files) {
    if (extension(f.name) === ".ptd") state.ptd.push([f.name, await readFile(f)]);
    if ([".npy", ".npz"].includes(extension(f.name))) setInputs({ name: f.name, bytes: await readFile(f) });
  }
  await describe();
}

function setProgram(pte, ptd) {
  state.pte = pte;
  state.ptd = ptd;
  setRefusal(null);
  setInputs(null);
  $("result-section").hidden = true;
}

function setInputs(inputs) {
  state.inputs = inputs;
  $("inputs-info").textContent = inputs ? `from ${inputs.name}` : "random normal values";
  $("clear-inputs").hidden = !inputs;
}

function showFileList() {
  const items = [];
  if (state.pte) items.push(`${state.pte.name} (${state.pte.bytes.length} bytes)`);
  for (const [name, bytes] of state.ptd) items.push(`${name} (${bytes.length} bytes)`);
  $("file-list").replaceChildren(...items.map((text) => Object.assign(document.createElement("li"), { textContent: text })));
}

async function loadExample(name) {
  clearError();
  $("graph-section").hidden = true; // the old graph must not pass for the new one
  const entry = examples.find((e) => e.name === name);
  const fetchBytes = async (path) => {
    const response = await fetch(`/fixtures/${path}`);
    if (!response.ok) throw new Error(`could not fetch /fixtures/${path}: HTTP ${response.status}`);
    return new Uint8Array(await response.arrayBuffer());
  };
  try {
    const ptd = await Promise.all(entry.ptd_files.map(async (p) => [p.split("/").pop(), await fetchBytes(p)]));
    setProgram({ name: entry.pte, bytes: await fetchBytes(entry.pte) }, ptd);
    // The example's .npz holds torch's inputs and outputs: run on those by default.
    if (entry.npz) setInputs({ name: entry.npz, bytes: await fetchBytes(entry.npz) });
  } catch (error) {
    showError("Could not load the example", { message: error.message, traceback: error.stack ?? "" });
    return;
  }
  await describe();
}

// --- describe and run ----------------------------------------------------------------
async function describe() {
  showFileList();
  updateButtons();
  $("graph-section").hidden = true;
  if (!state.pte || !state.webapp) return;
  const summary = await busy("Reading the program…", () =>
    callPython("page_describe", state.pte.bytes, state.ptd, state.pte.name));
  if (!summary) return;
  // Unsupported ops cannot run at all; other problems (a missing .ptd) the run explains.
  setRefusal(summary.unsupported_ops.length ? `no WebGPU kernel for ${summary.unsupported_ops.join(", ")}` : null);
  $("graph").replaceChildren(...renderGraph(summary));
  $("graph-section").hidden = false;
}

async function run() {
  clearError();
  $("result").dataset.state = "running";
  const inputs = state.inputs ? [state.inputs.name, state.inputs.bytes] : undefined;
  const result = await busy("Running…", () =>
    callPython("page_run", state.pte.bytes, state.ptd, inputs, Number($("repeat").value) || 1,
      Number($("seed").value) || 0, $("profile").checked));
  $("result-section").hidden = !result;
  $("result").dataset.state = result ? "done" : "error";
  if (result) $("result").replaceChildren(...renderResult(result));
}

function setRefusal(text) {
  state.refusal = text;
  $("run-refusal").textContent = text ? `Cannot run this program on WebGPU: ${text}` : "";
  $("run-refusal").hidden = !text;
  updateButtons();
}

async function busy(text, work) {
  state.busy = true;
  $("run-status").textContent = text;
  updateButtons();
  try {
    return await work();
  } finally {
    state.busy = false;
    $("run-status").textContent = "";
    updateButtons();
  }
}

function updateButtons() {
  const pythonReady = Boolean(state.webapp);
  $("run-button").disabled = !pythonReady || !state.pte || state.busy || Boolean(state.refusal);
  $("load-example").disabled = !pythonReady || !examples.length || state.busy;
  $("example-select").disabled = !examples.length;
}

// --- bundled examples and events ---------------------------------------------------------
let examples = [];
fetch("/fixtures/index.json")
  .then((response) => (response.ok ? response.json() : []))
  .catch(() => [])
  .then((list) => {
    examples = list;
    $("example-select").replaceChildren(...(list.length ? list : [{ name: "", description: "no bundled examples" }])
      .map((e) => Object.assign(document.createElement("option"),
        { value: e.name, textContent: e.name ? `${e.name} — ${e.description.slice(0, 70)}` : e.description })));
    updateButtons();
  });

$("load-example").addEventListener("click", () => loadExample($("example-select").value));
$("run-button").addEventListener("click", run);
$("file-input").addEventListener("change", (event) => addFiles(event.target.files).finally(() => (event.target.value = "")));
$("inputs-file").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (file) setInputs({ name: file.name, bytes: await readFile(file) });
  event.target.value = "";
});
$("clear-inputs").addEventListener("click", () => setInputs(null));

const zone = $("drop-zone");
zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
zone.addEventListener("dragleave", () => zone.classList.remove("over"));
zone.addEventListener("drop", (event) => {
  event.preventDefault();
  zone.classList.remove("over");
  addFiles(event.dataTransfer.files);
});
