// A minimal offline Python console: Pyodide's own console.html needs jQuery
// Terminal / xterm from a CDN, which an offline page cannot load.
import { bootPyodide } from "./boot.js";

const $ = (id) => document.getElementById(id);
const output = $("console-output");
const input = $("console-input");
const history = [];
let historyAt = 0;
let namespace = null; // one Python dict: variables persist between runs
let repr = null;

function print(text, kind = "") {
  const span = document.createElement("span");
  if (kind) span.className = kind;
  span.textContent = text;
  output.append(span);
  output.scrollTop = output.scrollHeight;
}

window.bootStages = [];
const ready = bootPyodide({
  indexURL: new URLSearchParams(location.search).get("indexURL") ?? "/pyodide/",
  onProgress(stage, detail) {
    window.bootStages.push({ stage, ...detail });
    $("boot-stage").textContent = `${stage} (${(detail.ms / 1000).toFixed(1)} s)`;
  },
}).then((pyodide) => {
  window.pyodide = pyodide;
  pyodide.setStdout({ batched: (line) => print(line + "\n") });
  pyodide.setStderr({ batched: (line) => print(line + "\n", "err") });
  namespace = pyodide.toPy({});
  repr = pyodide.runPython("repr");
  pyodide.runPython("import pte_webgpu", { globals: namespace });
  print(`Python ${pyodide.runPython("import sys; sys.version.split()[0]")} (Pyodide ${pyodide.version}), ` +
    `pte_webgpu ${pyodide.runPython("pte_webgpu.__version__", { globals: namespace })} imported\n`);
  $("boot-status").dataset.state = "ready";
  $("boot-stage").textContent = "Ready";
  $("console-run").disabled = false;
  return pyodide;
});
window.pyodideReady = ready;
ready.catch((error) => {
  $("boot-status").dataset.state = "failed";
  $("boot-stage").textContent = `Python failed to start: ${error.message}`;
});

async function run() {
  const code = input.value;
  if (!code.trim() || output.dataset.state === "running") return;
  history.push(code);
  historyAt = history.length;
  print(code.split("\n").map((line, i) => (i ? "... " : ">>> ") + line).join("\n") + "\n", "in");
  output.dataset.state = "running";
  $("console-run").disabled = true;
  const pyodide = await ready;
  try {
    const value = await pyodide.runPythonAsync(code, { globals: namespace });
    if (value !== undefined) print(repr(value) + "\n");
    if (value instanceof pyodide.ffi.PyProxy) value.destroy();
  } catch (error) {
    print(error.message + "\n", "err"); // a Python traceback: what a console shows
  } finally {
    output.dataset.state = "idle";
    $("console-run").disabled = false;
  }
}

$("console-run").addEventListener("click", run);
$("console-clear").addEventListener("click", () => output.replaceChildren());
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey || event.shiftKey)) {
    event.preventDefault();
    run();
  } else if (event.ctrlKey && (event.key === "ArrowUp" || event.key === "ArrowDown") && history.length) {
    event.preventDefault();
    historyAt = Math.max(0, Math.min(history.length - 1, historyAt + (event.key === "ArrowUp" ? -1 : 1)));
    input.value = history[historyAt];
  }
});
