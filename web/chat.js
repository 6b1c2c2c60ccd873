// The chat page: downloads the model with progress (kept in the Cache API, so a reload does
// not fetch it again), loads it in Python (pte_webgpu.llm.page_chat) and streams answers.
// ?model=URL.pte&tokenizer=URL.json; without ?model=, the smallest of the models listed
// in ?models=URL (default /llm/models.json: `pte-webgpu serve` writes it for build/llm,
// pte_webgpu.llm.model_list), else build/llm's SmolLM2 under /llm/ (its 4-bit program
// when `make llm` made one: ~100 MB to download instead of 540). The listed models fill
// a picker; picking one reloads the page with it.
import { bootPyodide } from "./boot.js";

const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const DEFAULT_MODELS = ["/llm/smollm2-135m-instruct-q4.pte", "/llm/smollm2-135m-instruct.pte"];
const CACHE = "pte-webgpu-models";
// NAME-fp16.pte and NAME-q4.pte share NAME.tokenizer.json
const tokenizerOf = (model) => model.replace(/(-fp16|-q4)?\.pte$/, ".tokenizer.json");

/** The models of ?models= (or /llm/models.json) as [{url, tokenizer, label}], [] if none. */
async function listedModels() {
  const index = params.get("models") ?? "/llm/models.json";
  const response = await fetch(index).catch(() => null);
  if (!response?.ok) return [];
  const list = (await response.json().catch(() => ({}))).models ?? [];
  const base = new URL(index, location.href);
  return list.map((m) => ({
    url: new URL(m.file, base).pathname,
    tokenizer: new URL(m.tokenizer, base).pathname,
    label: `${m.name} · ${m.precision} · ${(m.bytes / 2 ** 20).toFixed(0)} MiB (${m.file})`,
  }));
}

/** The picker over the listed models; picking one reloads the page with it. */
function showPicker(models, current) {
  if (!models.length) return;
  const select = $("model-pick");
  for (const m of models) {
    const option = new Option(m.label, m.url, false, m.url === current);
    option.dataset.tokenizer = m.tokenizer;
    select.append(option);
  }
  $("picker").hidden = false;
  select.addEventListener("change", () => {
    const next = new URLSearchParams(params);
    next.set("model", select.value);
    next.set("tokenizer", select.selectedOptions[0].dataset.tokenizer);
    location.search = next.toString();
  });
}

/** The ?model= URL, else the first listed model, else the first default the server has. */
async function pickModel(models) {
  if (params.get("model")) return params.get("model");
  if (models.length) return models[0].url;
  for (const url of DEFAULT_MODELS.slice(0, -1)) {
    const head = await fetch(url, { method: "HEAD" }).catch(() => null);
    if (head?.ok) return url;
  }
  return DEFAULT_MODELS.at(-1);
}

const status = (text) => ($("status").textContent = text);
function fail(error) {
  // A Python exception's message is its traceback: the user gets its last line.
  const text = error.message ?? String(error);
  $("error").textContent = error.type ? text.trim().split("\n").pop() : text;
  $("error").hidden = false;
  status("stopped");
  $("progress").hidden = true;
}

/** The bytes at `url`, from the Cache API when there, else downloaded with progress. */
async function cachedBytes(url, label) {
  const cache = "caches" in self ? await caches.open(CACHE) : null;
  let response = cache && (await cache.match(url));
  const cached = Boolean(response);
  if (!response) {
    response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status} (run \`make llm\`?)`);
    // Caching is a saving, not a need: a full quota (a private window holds little)
    // leaves the model uncached, not the page broken.
    if (cache) {
      await cache.put(url, response.clone()).catch((error) =>
        console.warn(`not cached (${url}): ${error.message ?? error}`));
    }
  }
  const total = Number(response.headers.get("Content-Length")) || 0;
  const reader = response.body.getReader();
  const bar = $("progress");
  const out = total ? new Uint8Array(total) : null;
  const parts = [];
  let got = 0;
  bar.hidden = !total;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (out) out.set(value, got); else parts.push(value);
    got += value.length;
    if (total) bar.value = got / total;
    status(`${cached ? "reading cached" : "downloading"} ${label}: ${(got / 2 ** 20).toFixed(1)}` +
           (total ? ` / ${(total / 2 ** 20).toFixed(1)} MiB` : " MiB"));
  }
  bar.hidden = true;
  if (out) return out;
  const joined = new Uint8Array(got);
  let at = 0;
  for (const p of parts) { joined.set(p, at); at += p.length; }
  return joined;
}

let chat = null; // PyProxy of pte_webgpu.llm.page_chat
const started = performance.now();
window.bootStages = [];
window.pyodideReady = bootPyodide({
  indexURL: params.get("indexURL") ?? "/pyodide/",
  onProgress(stage, detail) {
    window.bootStages.push({ stage, ...detail });
    status(`starting Python: ${stage}`);
  },
}).then((pyodide) => (window.pyodide = pyodide));

/** Bytes of Pyodide's wasm memory (it only grows: after a load it is the load's peak). */
const wasmHeapBytes = () => window.pyodide?._module?.HEAPU8?.length ?? 0;

async function main() {
  const pyodide = await window.pyodideReady;
  chat = pyodide.pyimport("pte_webgpu.llm.page_chat");
  const models = await listedModels();
  const model = await pickModel(models);
  showPicker(models, model);
  $("model-url").textContent = model;
  const listed = models.find((m) => m.url === model);
  const tokenizerUrl = params.get("tokenizer") ?? listed?.tokenizer ?? tokenizerOf(model);
  const tokenizer = new TextDecoder().decode(await cachedBytes(tokenizerUrl, "tokenizer"));
  let pte = await cachedBytes(model, "model");
  status(`uploading ${(pte.length / 2 ** 20).toFixed(0)} MiB of weights to the GPU…`);
  const t0 = performance.now();
  // Kept for tests and tools/screenshot_chat.py: the weights must not be held twice.
  const heap = (window.heapStats = { before: wasmHeapBytes(), peak: wasmHeapBytes() });
  const poll = setInterval(() => (heap.peak = Math.max(heap.peak, wasmHeapBytes())), 50);
  let info;
  try {
    const loading = chat.load(pte, tokenizer);
    pte = null; // Python copies it once into its heap; then the JS copy can go
    info = (await loading).toJs({ dict_converter: Object.fromEntries });
  } finally {
    clearInterval(poll);
    heap.after = wasmHeapBytes();
    heap.peak = Math.max(heap.peak, heap.after);
  }
  if (info.adapter) $("adapter").textContent = `WebGPU adapter: ${info.adapter}`;
  if (info.error) throw new Error(info.error); // e.g. GpuLimitError: the model does not fit
  status(`ready: loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s ` +
         `(page up ${((performance.now() - started) / 1000).toFixed(1)} s)`);
  for (const id of ["input", "send", "new-chat"]) $(id).disabled = false;
  window.chatReady = true;
}

function bubble(role, text) {
  const div = document.createElement("div");
  div.className = `msg ${role}`;
  div.textContent = text;
  $("log").append(div);
  return div;
}

$("form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const text = $("input").value.trim();
  if (!text || $("send").disabled) return;
  $("input").value = "";
  $("send").disabled = true;
  $("stop").disabled = false;
  bubble("user", text);
  const answer = bubble("assistant", "");
  const t0 = performance.now();
  try {
    const onPiece = (piece, tokens) => {
      answer.textContent += piece;
      const s = (performance.now() - t0) / 1000;
      $("speed").textContent = `${tokens} tokens, ${(tokens / s).toFixed(2)} tok/s`;
    };
    const result = (await chat.send(text, onPiece)).toJs({ dict_converter: Object.fromEntries });
    $("speed").textContent = `${result.tokens} tokens; prefill ${result.prompt_tokens - result.reused}` +
      ` tokens in ${result.prefill_ms.toFixed(0)} ms (${result.reused} reused from the cache);` +
      ` decode ${result.decode_tok_s.toFixed(2)} tok/s` +
      (result.stopped === "stopped" ? "; stopped" : "");
    answer.dataset.stopped = result.stopped;
    answer.dataset.reused = String(result.reused);
    answer.dataset.done = "true";
  } catch (error) {
    fail(error);
  } finally {
    $("send").disabled = false;
    $("stop").disabled = true;
  }
});
// Ends the answer after its current token; the next turn reuses what the cache holds.
$("stop").addEventListener("click", () => chat?.stop());
$("new-chat").addEventListener("click", () => {
  chat.new_chat();
  $("log").replaceChildren();
});

main().catch(fail);
