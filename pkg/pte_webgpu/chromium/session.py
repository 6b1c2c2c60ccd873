"""Headless Chromium running Pyodide, driven from host Python through Playwright.

    with StaticServer({"/": "web", "/pyodide/": ensure_dist()}) as server, \\
            BrowserSession(server.url) as session:
        session.run_python("import pte_webgpu; pte_webgpu.__version__")  # -> "0.1.0"
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass

from . import config

KEPT_CACHE_BYTES = 256 << 20  # HTTP cache of a kept profile: a few dists' worth

# Defined once in the page: turns run_python's result into JSON text inside Python,
# where every value type is known (JS objects arrive as JsProxy).
_TO_JSON_HELPER = r'''
def _pte_host_to_json(value):
    import json

    def fallback(obj):
        if isinstance(obj, (bytes, bytearray, memoryview)):
            return list(bytes(obj))
        if isinstance(obj, (set, frozenset)):
            return list(obj)
        if hasattr(obj, "to_py"):  # JsProxy: JS arrays and plain objects convert
            converted = obj.to_py()
            if converted is not obj:
                return converted
        return repr(obj)

    return json.dumps(value, default=fallback)
'''

_RUN_PYTHON_JS = """async (code) => {
  const py = await window.pyodideReady;
  let value;
  try {
    value = await py.runPythonAsync(code);
  } catch (error) {
    if (error?.constructor?.name !== "PythonError") throw error;
    return { error: error.message, type: error.type };
  }
  const toJson = py.globals.get("_pte_host_to_json");
  try {
    return { json: toJson(value) };
  } finally {
    toJson.destroy();
    if (value instanceof py.ffi.PyProxy) value.destroy();
  }
}"""


def _isolate(route) -> None:
    """A page route that serves the response with COOP/COEP (cross-origin isolation)."""
    response = route.fetch()
    route.fulfill(response=response, headers={
        **response.headers, "cross-origin-opener-policy": "same-origin",
        "cross-origin-embedder-policy": "require-corp"})


class BrowserPythonError(Exception):
    """A Python exception raised inside Pyodide; `traceback` is its text from the page."""

    def __init__(self, type_name: str, traceback: str):
        super().__init__(traceback)
        self.type_name = type_name
        self.traceback = traceback


@dataclass
class ConsoleMessage:
    type: str  # "log", "warning", "error", ...
    text: str

    def __str__(self) -> str:
        return f"[{self.type}] {self.text}"


class BrowserSession:
    """Playwright + Chromium + one page on `harness` with Pyodide and pte-webgpu loaded.

    base_url: server root that serves web/ at "/" and the dist at `index_url`.
    isolated: serve every response with COOP/COEP, so the page is cross-origin isolated
    (Chromium then steps performance.now() by 5 µs instead of 100 µs: bench/roundtrip.py).
    """

    def __init__(self, base_url: str, *, harness: str = "harness.html", index_url: str = "/pyodide/",
                 launch_options: dict | None = None, timeout_ms: int | None = None,
                 progress=None, user_data_dir: str | None = None, isolated: bool = False):
        self.url = f"{base_url.rstrip('/')}/{harness}?indexURL={index_url}"
        self._launch_options = launch_options or config.launch_options()
        self._timeout_ms = timeout_ms or config.default_timeout_ms()
        self.console_messages: list[ConsoleMessage] = []
        self.page_errors: list[str] = []
        self.launch_seconds = 0.0  # Playwright start + Chromium launch + new page
        self.boot_seconds = 0.0  # page load until Pyodide and pte-webgpu are ready
        self.boot_stages: list[dict] = []  # [{stage, ms, ...}] reported by web/boot.js
        self._playwright = self._browser = self.page = None
        self._progress = progress or (lambda text: None)  # hears of each slow step
        # A kept profile keeps Chromium's HTTP cache, and with it V8's compiled
        # pyodide.asm.wasm: later boots skip most of the compile.
        self._user_data_dir = user_data_dir
        self._context = None
        self._isolated = isolated
        self._page_only = False  # a sibling(): its close() closes its page alone

    def start(self) -> "BrowserSession":
        from playwright.sync_api import sync_playwright  # host-only dependency

        started = time.perf_counter()
        self._progress("launching Chromium")
        self._playwright = sync_playwright().start()
        try:
            if self._user_data_dir:
                options = dict(self._launch_options)  # the kept cache stays bounded
                options["args"] = [*options.get("args", ()), f"--disk-cache-size={KEPT_CACHE_BYTES}"]
                self._context = self._playwright.chromium.launch_persistent_context(
                    self._user_data_dir, **options)
                self.page = self._context.new_page()
            else:
                self._browser = self._playwright.chromium.launch(**self._launch_options)
                self.page = self._browser.new_page()
            self._attach(self.page)
            self.launch_seconds = time.perf_counter() - started
            self._boot()
        except BaseException:
            self.close()
            raise
        return self

    def _attach(self, page) -> None:
        page.set_default_timeout(self._timeout_ms)
        page.on("console", lambda m: self.console_messages.append(ConsoleMessage(m.type, m.text)))
        page.on("pageerror", lambda e: self.page_errors.append(str(e.stack or e)))
        if self._isolated:
            page.route("**/*", _isolate)

    def sibling(self) -> "BrowserSession":
        """Another page of this session's browser, booted as this one was: its own Pyodide
        and wasm heap (a test that bloats the heap leaves the shared page alone); its
        close() closes that page only."""
        other = copy.copy(self)
        other.console_messages, other.page_errors = [], []
        other._playwright = other._browser = other._context = None  # this session's to close
        other.page = (self._context or self._browser).new_page()
        other._page_only = True
        try:
            other._attach(other.page)
            other._boot()
        except BaseException:
            other.close()
            raise
        return other

    def _boot(self) -> None:
        started = time.perf_counter()
        self._progress("booting Pyodide in the page")
        self.page.goto(self.url)
        try:
            self.page.wait_for_function("window.pyodideReady !== undefined")
            self.page.evaluate("window.pyodideReady.then(() => true)")
        except Exception as error:
            raise RuntimeError(f"Pyodide failed to boot: {error}\n{self.log_text()}") from error
        self.boot_seconds = time.perf_counter() - started
        self.boot_stages = self.page.evaluate("window.bootStages")
        self.page.evaluate("(code) => window.pyodide.runPython(code)", _TO_JSON_HELPER)

    def run_python(self, code: str) -> object:
        """Run `code` with pyodide.runPythonAsync (top-level await allowed) in the page's
        __main__ namespace; returns its last expression converted to JSON data.
        Raises BrowserPythonError with the Python traceback text."""
        outcome = self.page.evaluate(_RUN_PYTHON_JS, code)
        if "error" in outcome:
            raise BrowserPythonError(outcome["type"], outcome["error"])
        return json.loads(outcome["json"])

    def log_text(self) -> str:
        """Console messages and page errors, one per line, for failure reports."""
        lines = [str(m) for m in self.console_messages] + [f"[pageerror] {e}" for e in self.page_errors]
        return "\n".join(lines) or "(no console output)"

    def close(self) -> None:
        if self._page_only and self.page:
            self.page.close()
        if self._context:
            self._context.close()
        if self._browser:
            self._browser.close()
        if self._playwright:
            self._playwright.stop()
        self._playwright = self._browser = self._context = self.page = None

    def __enter__(self) -> "BrowserSession":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()
