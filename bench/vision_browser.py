"""``bench --vision --backend browser``: one headless Chromium, one page (web/harness.html,
Pyodide), one server. In that page ours runs the .pte (bench/vision_job.py, its text sent
to the page with gpu_bench.py's), then ONNX Runtime Web runs the same model as ONNX
(bench/vision_web.js), each ORT build in turn: JSEP (ort.mjs) and the WebGPU EP
(ort.webgpu.mjs). All are fed the same image (input.bin) and timed in the page the same
way; their outputs come back to the host, which compares them.

Two ways to drive the page: Playwright (the project's BrowserSession; here and in the
tests), or Chrome's DevTools protocol over a pipe with the standard library alone
(``chrome=PATH``: tools/h200_browser_fixtures.Chrome; the lent H200 has no Playwright).

Files: build/ortweb (``make llm-web-deps``); the ONNX model (bench/vision_export.py). A
missing one skips ORT Web with a line saying what to run.
"""

from __future__ import annotations

import base64
import json
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:  # vision_job beside this file
    sys.path.append(str(HERE))
ORT_DIST = REPO / "build" / "ortweb" / "node_modules" / "onnxruntime-web" / "dist"
ORT_BUILDS = {"jsep": "ort.mjs", "webgpu-ep": "ort.webgpu.mjs"}
TIMEOUT_S = 1800.0  # SwiftShader: a full-size model's runs take minutes
MIN_SAMPLE_MS = 5.0  # the page's timer steps by 0.1 ms: samples of 5 ms or more


class PlaywrightPage:
    """The harness page through pte_webgpu.chromium.session (Playwright)."""

    def __init__(self, base_url: str, index_url: str, progress):
        from pte_webgpu.chromium.session import BrowserSession

        self.session = BrowserSession(base_url, index_url=index_url,
                                      timeout_ms=int(TIMEOUT_S * 1e3), progress=progress)

    def __enter__(self):
        self.session.start()
        return self

    def __exit__(self, *exc):
        self.session.close()

    def evaluate(self, expression: str, timeout_s: float = TIMEOUT_S):
        return self.session.page.evaluate(expression)

    def log(self) -> str:
        return self.session.log_text()


def _fixtures_driver():
    """tools/h200_browser_fixtures.py: its stdlib DevTools-protocol driver and page helpers."""
    sys.path.insert(0, str(REPO / "tools"))
    try:
        import h200_browser_fixtures
    finally:
        sys.path.remove(str(REPO / "tools"))
    return h200_browser_fixtures


class CdpPage:
    """The harness page through Chrome's DevTools protocol (tools/h200_browser_fixtures)."""

    def __init__(self, base_url: str, index_url: str, chrome: str, flags, progress):
        Chrome = _fixtures_driver().Chrome
        self._make = lambda: Chrome(chrome, list(flags), "/tmp/vision-bench-chromium.log")
        self.url = f"{base_url}harness.html?indexURL={index_url}"
        self.progress = progress
        self.chrome = None

    def __enter__(self):
        self.progress("launching Chromium (DevTools protocol)")
        self.chrome = self._make()
        try:
            self.chrome.open(self.url)
            # asked again and again: an evaluate sent before the navigation commits runs in
            # about:blank, whose context then goes away without an answer
            deadline = time.time() + 300
            while not self.chrome.evaluate("window.pyodideReady !== undefined", 30):
                if time.time() > deadline:
                    raise TimeoutError(f"{self.url} did not start Pyodide in 300 s")
                time.sleep(0.5)
            self.chrome.evaluate("window.pyodideReady.then(() => true)", 600)
        except BaseException:
            self.chrome.close()
            raise
        return self

    def __exit__(self, *exc):
        self.chrome.close()

    def evaluate(self, expression: str, timeout_s: float = TIMEOUT_S):
        return self.chrome.evaluate(expression, timeout_s)

    def log(self) -> str:
        return "\n".join(self.chrome.console[-50:]) or "(no console output)"


def python(page, code: str, timeout_s: float = TIMEOUT_S):
    """runPythonAsync(code) in the page; code's value is JSON text, returned decoded."""
    out = page.evaluate(_fixtures_driver().python_expression(code), timeout_s)
    if "error" in out:
        raise RuntimeError(f"in the page: {out['error']}")
    return json.loads(out["value"])


_OURS = """
import gzip as _gzip, json as _json, sys as _sys, types as _types
import js as _js
from pyodide.http import pyfetch as _pyfetch
for _name, _src in _json.loads({sources!r}).items():
    _m = _types.ModuleType(_name)
    exec(compile(_src, f"bench/{{_name}}.py", "exec"), _m.__dict__)
    _sys.modules[_name] = _m
import vision_job as _vj
_pte = await (await _pyfetch({url!r})).bytes()
if {url!r}.endswith(".gz"):
    _pte = _gzip.decompress(_pte)
_image = await (await _pyfetch({input_url!r})).bytes()
try:
    _r = await _vj.vision_job(_pte, _image, runs={runs}, warmup={warmup}, backend="browser",
                              progress=lambda t: _js.console.info("vision-bench: ours: " + t))
except Exception as _e:  # a PteError (an op we lack) needs no traceback
    import traceback as _tb
    from pte_webgpu.errors import PteError as _PteError
    _r = {{"error": {{"type": type(_e).__name__, "message": str(_e),
                      "traceback": "" if isinstance(_e, _PteError) else _tb.format_exc()[-3000:]}}}}
del _pte
_json.dumps(_r)
"""


def decode_output(out: dict):
    import numpy as np

    dtype = {"float32": "<f4", "float16": "<f2"}.get(out.get("dtype", "float32"), "<f4")
    return np.frombuffer(base64.b64decode(out["b64"]), dtype).reshape(out["shape"]).astype("f4")


def ort_builds(names, onnx: Path | None, log) -> list[str]:
    """The ORT builds to run: those asked for whose files are here (and an ONNX model)."""
    if onnx is None or not onnx.is_file():
        log(f"no ONNX model ({onnx or 'none given'}; bench/vision_export.py writes NAME.onnx): "
            "skipping ORT Web")
        return []
    here = [b for b in names if (ORT_DIST / ORT_BUILDS[b]).is_file()]
    for b in names:
        if b not in here:
            log(f"no {ORT_DIST / ORT_BUILDS[b]} (make llm-web-deps): skipping ort-web {b}")
    return here


def _ort_version() -> str:
    try:
        return json.loads((ORT_DIST.parent / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "?"


def run(model: Path, image, onnx: Path | None, *, runs: int = 50, warmup: int = 10,
        builds=tuple(ORT_BUILDS), chrome: str | None = None, flags=(), dist: Path | None = None,
        progress=print) -> tuple[list[dict], dict]:
    """(records, {impl label: output array}) of ours and ORT Web in one page."""
    import numpy as np

    import vision_job
    from pte_webgpu.chromium.server import StaticServer

    if dist is None:
        from pte_webgpu.chromium.dist import ensure_dist

        dist = ensure_dist(log=progress)
    builds = ort_builds(builds, onnx, progress)
    sources = json.dumps({n: (HERE / f"{n}.py").read_text() for n in ("gpu_bench", "vision_job")})
    records, outputs = [], {}
    with tempfile.TemporaryDirectory(prefix="vision-bench-") as tmp, \
            StaticServer({"/": REPO / "web", "/pyodide/": dist, "/bench/": HERE}) as server:
        (Path(tmp) / "input.bin").write_bytes(np.ascontiguousarray(image, "<f4").tobytes())
        input_url = server.mount("/input/", tmp, {"input.bin"}) + "input.bin"
        real = model.resolve()
        url = server.mount("/job/", real.parent, {real.name}) + real.name
        if builds:
            server.mount("/ort/", ORT_DIST)
            model_url = server.mount("/onnx/", onnx.resolve().parent, {onnx.name}) + onnx.name
        page = (CdpPage(server.url, "/pyodide/", chrome, flags, progress) if chrome
                else PlaywrightPage(server.url, "/pyodide/", progress))
        with page:
            progress("ours: loading the program in Pyodide")
            t0 = time.perf_counter()
            got = python(page, _OURS.format(sources=sources, url=url, input_url=input_url,
                                            runs=runs, warmup=warmup))
            adapter = python(page, "import json\nfrom pte_webgpu.gpu.browser import "
                             "BrowserDevice as _D\n_d = await _D.create()\n_s = _d.info.summary()"
                             "\n_d.close()\njson.dumps(_s)")
            if "error" in got:  # an op we lack: ORT Web still runs
                e = got["error"]
                progress(f"ours failed: {e['type']}: {e['message'][:300]}\n{e['traceback']}".strip())
                records.append({"impl": "ours", "error": f"{e['type']}: {e['message']}",
                                "adapter": adapter, "backend": "browser"})
            else:
                progress(f"ours: {time.perf_counter() - t0:.0f} s")
                records += got["records"]
                outputs["ours"] = decode_output(got["output"])
            for build in builds:
                spec = {"build": build, "modelUrl": model_url, "inputUrl": input_url,
                        "dims": list(image.shape), "runs": runs, "warmup": warmup,
                        "minSampleMs": MIN_SAMPLE_MS}
                progress(f"ort-web {build}: loading {onnx.name}")
                t0 = time.perf_counter()
                try:
                    r = page.evaluate("import('/bench/vision_web.js').then((m) => "
                                      f"m.benchOrtVision({json.dumps(spec)}))")
                except Exception as e:  # one build failing must not lose the others
                    progress(f"ort-web {build} failed: {str(e).splitlines()[0][:300]}")
                    continue
                progress(f"ort-web {build}: {time.perf_counter() - t0:.0f} s")
                rec = dict(vision_job.spread(r["ms"]), impl="ort-web", variant=f"ort-web {build}",
                           build=build, ms=r["ms"], group=r["group"], warmup=warmup,
                           input=list(image.shape), load_s=r["load_ms"] / 1e3,
                           version=f"onnxruntime-web {_ort_version()} ({build})",
                           adapter=adapter, backend="browser", file=onnx.name)
                if isinstance(r.get("profile"), list):
                    rec["profile"] = r["profile"]
                    rec["gpu_profile_ms"] = sum(row["us"] for row in r["profile"]) / 1e3
                records.append(rec)
                outputs[rec["variant"]] = decode_output(r["output"])
    return records, outputs
