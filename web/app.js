// The demo page's UI. Python (Pyodide + pte_webgpu.app.webapp) runs in worker.js, so this
// thread stays free to draw: all parsing, GPU work and checking happen in Python there;
// this file only moves bytes and shows results. window.pyodideReady (resolves once the
// boot and the adapter check are done) and window.bootStages follow harness.html.
import { cropBox, decodePicture, defaultNormalization, parseValues, pictureTensor, RULE } from "./image.js";
import { drawCrop, renderGraph, renderResult } from "./render.js";

const $ = (id) => document.getElementById(id);
const STAGES = {
  "import-module": "Loading the Pyodide module…",
  "load-pyodide": "Starting Python (WebAssembly)…",
  "load-package": "Loading the pte-webgpu package…",
  ready: "Python ready",
  adapter: "Asking for a WebGPU adapter…",
};

const state = {
  pythonReady: false, // the worker booted and a WebGPU adapter answered
  pte: null, // {name, bytes}
  ptd: [], // [[name, bytes], ...]
  inputs: null, // {name, bytes} of an .npy/.npz, or null for random inputs
  picture: null, // {name, bitmap, width, height, rgba}: the input instead, for an image program
  image: null, // the program's picture input {channels, height, width} (webapp), or null
  labels: null, // class names, one per class index, from a .txt
  refusal: null, // why this program cannot run (unsupported ops, unresolved constants), or null
  busy: false,
};

// --- the worker ------------------------------------------------------------------------
const indexURL = new URLSearchParams(location.search).get("indexURL") ?? "/pyodide/";
const worker = new Worker(new URL(`worker.js?indexURL=${encodeURIComponent(indexURL)}`, import.meta.url),
  { type: "module" });
const pending = new Map(); // call id -> {resolve, onProgress}
let nextCallId = 0;
let booted;
const bootedPromise = new Promise((resolve, reject) => (booted = { resolve, reject }));

worker.onmessage = ({ data }) => {
  if (data.kind === "progress") onBootStage(data.stage, data.detail);
  else if (data.kind === "booted") booted.resolve(data);
  else if (data.kind === "boot-failed") booted.reject(Object.assign(new Error(data.message), { stack: data.traceback }));
  else if (data.kind === "run-progress") pending.get(data.id)?.onProgress?.(data.done, data.total);
  else if (data.kind === "reply") {
    pending.get(data.id)?.resolve(data.reply);
    pending.delete(data.id);
  }
};
worker.onerror = (event) => booted.reject(new Error(`the Python worker failed: ${event.message ?? "unknown error"}`));

/** Calls webapp.<name>(...args) in the worker; returns its result, or shows its error and returns null. */
async function callPython(name, args, onProgress) {
  const id = nextCallId++;
  const reply = await new Promise((resolve) => {
    pending.set(id, { resolve, onProgress });
    worker.postMessage({ kind: "call", id, fn: name, args });
  });
  if (reply.ok) return reply.result;
  showError(ERROR_TITLES[name] ?? "Error", reply.error);
  return null;
}
const ERROR_TITLES = {
  page_describe: "Could not read the program",
  page_run: "The run failed",
  page_adapter: "No WebGPU device",
};

// --- boot ---------------------------------------------------------------------------
const bootStarted = performance.now();
const elapsed = () => ((performance.now() - bootStarted) / 1000).toFixed(1) + " s";
const ticker = setInterval(() => ($("boot-elapsed").textContent = elapsed()), 100);
window.bootStages = [];

function onBootStage(stage, detail) {
  window.bootStages.push({ stage, ...detail });
  $("boot-stage").textContent = STAGES[stage] ?? stage;
}

window.pyodideReady = bootedPromise.then(async ({ pyodideVersion, version }) => {
  onBootStage("adapter", { ms: Math.round(performance.now() - bootStarted) });
  const adapter = await callPython("page_adapter", []);
  if (!adapter) { // no "Ready" without a device: the run could only fail
    finishBoot("no-adapter", `Python is ready but no WebGPU adapter is available (after ${elapsed()})`);
    return false;
  }
  $("adapter").textContent = `WebGPU adapter: ${adapter.summary}`;
  state.pythonReady = true;
  finishBoot("ready", `Ready: Pyodide ${pyodideVersion}, pte-webgpu ${version}, in ${elapsed()}`);
  updateButtons();
  if (state.pte) await describe(); // files chosen while Python was starting
  return true;
}, (error) => {
  finishBoot("failed", `Python failed to start after ${elapsed()}`);
  showError("Python failed to start", { message: error.message, traceback: error.stack ?? "" });
  return false;
});

function finishBoot(status, text) {
  clearInterval(ticker);
  $("boot-status").dataset.state = status;
  $("boot-stage").textContent = text;
  $("boot-elapsed").textContent = "";
}

function showError(title, error) {
  $("error-title").textContent = title;
  $("error-message").textContent = error.message;
  $("error-traceback").textContent = error.traceback;
  $("error-details").open = false;
  $("error-details").hidden = !error.traceback; // a page-side error has no Python traceback
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
  setImageInput(null);
  setLabels(null); // another program's class names would mislabel this one's
  $("result-section").hidden = true;
}

// One source of inputs at a time: an .npy/.npz, a picture, or (neither) random values.
function setInputs(inputs) {
  Object.assign(state, { inputs, picture: null });
  showInputs();
}

function setPicture(picture) {
  Object.assign(state, { inputs: null, picture });
  showInputs();
}

function showInputs() {
  const { inputs, picture } = state;
  $("inputs-info").textContent = picture ? `picture ${picture.name} (${picture.width} × ${picture.height})`
    : inputs ? `from ${inputs.name}` : "random normal values";
  $("clear-inputs").hidden = !inputs && !picture;
  $("picture-figure").hidden = !(picture && state.image);
  if ($("picture-figure").hidden) return;
  const box = pictureBox();
  drawCrop($("picture-preview"), picture, box);
  $("picture-caption").textContent = `what the model sees: the centre ${box.width} × ${box.height} of ` +
    `${picture.width} × ${picture.height}, resized to ${state.image.width} × ${state.image.height}`;
}

/** Shows the picture controls when the program takes a picture (webapp's image_input). */
function setImageInput(image) {
  state.image = image;
  $("picture-box").hidden = !image;
  if (image) {
    $("picture-shape").textContent = `${image.channels === 1 ? "one channel" : "RGB"}, ${image.width} × ${image.height}`;
    const count = (id) => $(id).value.split(/[\s,]+/).filter(Boolean).length;
    if (count("picture-mean") !== image.channels || count("picture-std") !== image.channels) resetNormalization();
  }
  showInputs();
}

function resetNormalization() {
  const { mean, std } = defaultNormalization(state.image.channels);
  $("picture-mean").value = mean.join(", ");
  $("picture-std").value = std.join(", ");
}

const pictureBox = () => cropBox(state.picture.width, state.picture.height, state.image.width, state.image.height);

/** The picture as the method's input, [description, shape, float32 NCHW bytes] for page_run. */
function pictureInput() {
  const { channels, height, width } = state.image;
  const mean = parseValues($("picture-mean").value, channels, "mean");
  const std = parseValues($("picture-std").value, channels, "std", true);
  const { name, rgba, width: w, height: h } = state.picture;
  const data = pictureTensor(rgba, w, h, { channels, outHeight: height, outWidth: width, mean, std });
  const shape = [1, channels, height, width];
  window.pictureInput = { shape, data }; // the last picture tensor run, for tests and the curious
  const box = pictureBox();
  return [`${name}: centre ${box.width} × ${box.height} of ${w} × ${h}, resized to ${width} × ${height}, ` +
    `mean ${mean.join(", ")}, std ${std.join(", ")}`, shape, new Uint8Array(data.buffer)];
}

async function choosePicture(file) {
  clearError();
  try {
    setPicture({ name: file.name, ...(await decodePicture(file)) });
  } catch (error) {
    showError("Could not read the picture",
      { message: `${file.name}: the browser cannot decode it as a picture (${error.message})`, traceback: "" });
  }
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
  if (!state.pte || !state.pythonReady) return;
  const summary = await busy("Reading the program…", () =>
    callPython("page_describe", [state.pte.bytes, state.ptd, state.pte.name]));
  if (!summary) return;
  setRefusal(refusalOf(summary));
  setImageInput(summary.methods.find((m) => m.name === "forward")?.image_input ?? null);
  $("graph").replaceChildren(...renderGraph(summary));
  $("graph-section").hidden = false;
}

/** Why Run stays disabled: ops without a kernel, or constants no given file holds. */
function refusalOf(summary) {
  if (summary.unsupported_ops.length) {
    return `Cannot run this program on WebGPU: no WebGPU kernel for ${summary.unsupported_ops.join(", ")}`;
  }
  const missing = summary.unresolved_constants;
  if (missing.length) {
    const stored = [...new Set(missing.map((c) => c.stored))].join(", ");
    return `${missing.length} constant${missing.length > 1 ? "s" : ""} (${stored}) not found: ` +
      "add the .ptd file that holds them (drop it here or choose it with the .pte)";
  }
  return null;
}

async function run() {
  clearError();
  let picture = null;
  if (state.picture && state.image) {
    try {
      picture = pictureInput();
    } catch (error) {
      showError("Cannot use the picture", { message: error.message, traceback: "" });
      $("result").dataset.state = "error";
      return;
    }
  }
  const shown = picture && { source: state.picture, box: pictureBox() };
  $("result").dataset.state = "running";
  const inputs = state.inputs ? [state.inputs.name, state.inputs.bytes] : undefined;
  const repeat = Number($("repeat").value) || 1;
  $("run-count").textContent = `0 / ${repeat}`;
  $("cancel-button").hidden = false;
  $("cancel-button").disabled = false;
  const result = await busy("Running…", () =>
    callPython("page_run", [state.pte.bytes, state.ptd, inputs, repeat, Number($("seed").value) || 0,
      $("profile").checked, $("cast").checked, picture, $("reference").checked],
    (done, total) => ($("run-count").textContent = `${done} / ${total}`)));
  $("cancel-button").hidden = true;
  $("run-count").textContent = result ?
    `${result.execute_ms.runs} / ${result.execute_ms.requested}${result.cancelled ? " (cancelled)" : ""}` : "";
  $("result-section").hidden = !result;
  $("result").dataset.state = result ? "done" : "error";
  if (result) $("result").replaceChildren(...renderResult(result, { labels: state.labels, picture: shown }));
}

function setRefusal(text) {
  state.refusal = text;
  $("run-refusal").textContent = text ?? "";
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
  const pythonReady = state.pythonReady;
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
$("cancel-button").addEventListener("click", () => {
  worker.postMessage({ kind: "cancel" });
  $("cancel-button").disabled = true;
});
$("file-input").addEventListener("change", (event) => addFiles(event.target.files).finally(() => (event.target.value = "")));
$("inputs-file").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (file) setInputs({ name: file.name, bytes: await readFile(file) });
  event.target.value = "";
});
$("clear-inputs").addEventListener("click", () => setInputs(null));
$("picture-input").addEventListener("change", async (event) => {
  if (event.target.files[0]) await choosePicture(event.target.files[0]);
  event.target.value = "";
});
$("picture-defaults").addEventListener("click", resetNormalization);
$("picture-rule").textContent = RULE;
$("labels-input").addEventListener("change", async (event) => {
  const file = event.target.files[0];
  if (file) {
    const lines = (await file.text()).split(/\r?\n/).map((line) => line.trim());
    while (lines.length && !lines.at(-1)) lines.pop();
    setLabels(lines, file.name);
  }
  event.target.value = "";
});

function setLabels(labels, fileName) {
  state.labels = labels;
  $("labels-info").textContent = labels ? `${labels.length} labels from ${fileName}` : "";
}

function dropTarget(zone, onFiles) {
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    onFiles(event.dataTransfer.files);
  });
}
dropTarget($("drop-zone"), addFiles);
dropTarget($("picture-zone"), (files) => files[0] && choosePicture(files[0]));
