// Boots Pyodide from the local dist and loads our package; no CDN, no micropip.
// JavaScript only boots Pyodide: all GPU work happens in Python through `js`.

/**
 * @param {{indexURL?: string, onProgress?: (stage: string, detail: object) => void}} options
 *   indexURL: folder of pyodide.mjs, pyodide-lock.json and the wheels (default "/pyodide/").
 *   onProgress: called at each stage with {ms} (elapsed since boot start) and more details.
 * @returns {Promise<object>} the Pyodide instance, with pte_webgpu importable.
 */
export async function bootPyodide({ indexURL = "/pyodide/", onProgress = () => {} } = {}) {
  const started = performance.now();
  const report = (stage, detail = {}) =>
    onProgress(stage, { ms: Math.round(performance.now() - started), ...detail });
  indexURL = new URL(indexURL, location.href).href;
  if (!indexURL.endsWith("/")) indexURL += "/";

  report("import-module", { url: indexURL + "pyodide.mjs" });
  const { loadPyodide } = await import(indexURL + "pyodide.mjs");

  report("load-pyodide");
  // Our lock lists pte-webgpu and flatbuffers next to the core files.
  const pyodide = await loadPyodide({ indexURL, lockFileURL: indexURL + "pyodide-lock.json" });

  report("load-package", { version: pyodide.version });
  await pyodide.loadPackage("pte-webgpu", {
    messageCallback: (message) => report("load-package", { message }),
  });

  // loadPackage logs failures instead of throwing: importing surfaces them.
  pyodide.pyimport("pte_webgpu");
  report("ready");
  return pyodide;
}
