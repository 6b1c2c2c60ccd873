"""Run every bundled fixture program in headless Chromium (WebGPU) and compare with torch.

Standard library only: a static file server thread (web/ at /, the Pyodide dist at
/pyodide/, tests/fixtures at /fixtures/) and Chrome's DevTools protocol over
--remote-debugging-pipe (as ../shared/tools/h200-chromium/cdp_probe.py; no Playwright).
The page runs the browser tests' own page code (tests/browser/page_support.py,
tests/support/decoder_check.py, tests/support/stepwise_check.py) and the same checks as
the tests apply:

  tests/fixtures/index.json, extra/index.json, edge/index.json: run_fixture (repeat=2);
      passes when every output has the torch shape and abs or relative error <= tolerance
      (fixture_index.tolerance: 1e-5 fp32, 1e-2 with float16 tensors; edge: 1e-5)
  tests/fixtures/decoders, quant, q8da: decoder_report + check_report's rules (the index's
      tolerance)
  tests/fixtures/masks_kv: stepwise_report (1e-5; masks_fp16 2e-2)
  tests/fixtures/conv, vision_ops, image_page, vision: run_fixture (1e-4; force_fp16 2e-2)
  tests/fixtures/tensor_ops: stepwise_report (1e-4; force_fp16 2e-2)

Usage (on the lent H200, after `source tools/unpack.sh .chromium-parts` or the shared copy):
  python3 tools/h200_browser_fixtures.py --chrome "$CHROME" --dist DIST [--out results.json]
      [--only SUBSTRING,...] -- $CHROME_FLAGS
CHROME_LD (from unpack.sh) becomes Chromium's LD_LIBRARY_PATH. Exit status 0 when all pass.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

print = functools.partial(print, flush=True)
ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"


# ---------------------------------------------------------------- the jobs and their checks
def _fixture_tolerance(meta_path: Path, name: str) -> float:
    m = json.loads(meta_path.read_text())
    fp16 = "fp16" in name or any(t["dtype"] == "float16" for t in m["inputs"] + m["outputs"])
    return 1e-2 if fp16 else 1e-5


def jobs() -> list[dict]:
    out = []
    for sub in ("", "extra/"):
        for e in json.loads((FIXTURES / sub / "index.json").read_text()):
            name = sub + e["name"]
            ptd = [sub + p for p in e.get("ptd_files", [])]
            out.append({"kind": "fixture", "name": name, "ptd": ptd,
                        "tol": _fixture_tolerance(FIXTURES / f"{name}.json", name)})
    for e in json.loads((FIXTURES / "edge" / "index.json").read_text()):
        if "_eps0_rows" in e["name"]:  # torch's float32 over/underflows: a float64 reference
            out.append({"kind": "eps0", "name": "edge/" + e["name"], "tol": 1e-5})
            continue
        out.append({"kind": "fixture", "name": "edge/" + e["name"],
                    "ptd": ["edge/" + p for p in e.get("ptd_files", [])], "tol": 1e-5})
    decoders = json.loads((FIXTURES / "decoders" / "index.json").read_text())
    for name in sorted(decoders):
        d = decoders[name]
        if d.get("kind") == "dynamic-shape":  # no logits: compared step by step
            out.append({"kind": "stepwise", "name": "decoders/" + name, "tol": d["tolerance"]})
        else:
            out.append({"kind": "decoder", "name": "decoders/" + name, "tol": d["tolerance"],
                        "steps": d["steps"]})
    # issue 23's quantized programs, step by step as the decoders (tests/browser/
    # test_quant_decoders.py, test_q8da_programs_browser.py); one stopped at load by a
    # pending op (tests/support/quant_fixtures.py) counts as UNSUPPORTED
    for sub in ("quant", "q8da"):
        index = FIXTURES / sub / "index.json"
        for name, d in sorted(json.loads(index.read_text()).items()) if index.exists() else []:
            out.append({"kind": "decoder", "name": f"{sub}/{name}", "tol": d["tolerance"],
                        "steps": d["steps"]})
    for name, tol in (("masks", 1e-5), ("kv_cache", 1e-5), ("masks_fp16", 2e-2)):
        out.append({"kind": "stepwise", "name": "masks_kv/" + name, "tol": tol})
    # issue 19's programs: fp32 within 1e-4, force_fp16 within 2e-2 (the tests' bounds);
    # tensor_ops/ holds multi-call programs (update_cache), compared call by call
    for sub, kind in (("conv", "fixture"), ("vision_ops", "fixture"), ("image_page", "fixture"),
                      ("vision", "fixture"), ("tensor_ops", "stepwise")):
        index = FIXTURES / sub / "index.json"
        for e in json.loads(index.read_text()) if index.exists() else []:
            fp16 = "fp16" in e["name"] or bool(
                (e.get("partitioner_compile_options") or {}).get("force_fp16"))
            out.append({"kind": kind, "name": f"{sub}/{e['name']}", "tol": 2e-2 if fp16 else 1e-4,
                        "ptd": [f"{sub}/{p}" for p in e.get("ptd_files", [])]})
    return out


def page_code(job: dict) -> str:
    n = job["name"]
    if job["kind"] == "fixture":
        call = f"await run_fixture({n!r}, {job['ptd']!r}, repeat=2)"
    elif job["kind"] == "decoder":
        call = (f"await decoder_report(await runtime(), await fetch_bytes('/fixtures/{n}.pte'), "
                f"await fetch_bytes('/fixtures/{n}.npz'))")
    elif job["kind"] == "eps0":
        call = f"await _eps0_check({n.split('/', 1)[1]!r})"
    else:
        call = (f"await stepwise_report(await runtime(), await fetch_bytes('/fixtures/{n}.pte'), "
                f"await fetch_bytes('/fixtures/{n}.npz'), {job['tol']!r})")
    return f"""
import json as _json, time as _time, traceback as _tb
_t0 = _time.perf_counter()
try:
    _r = {{"report": {call}}}
except Exception as _e:
    _r = {{"error": type(_e).__name__, "message": str(_e)[:3000], "traceback": _tb.format_exc()[-4000:]}}
_r["seconds"] = _time.perf_counter() - _t0
_r["live_buffers_after"] = (await runtime()).device.live_buffer_count
_json.dumps(_r, default=repr)
"""


# In the page (after page_support.py): an edge program's output for in0 against a float64
# rms_norm / layer_norm (eps 0) of in0, weight (, bias), as tests/*/test_reduction_edges.py:
# finite, |got - want| <= 1e-6 + 1e-5 |want|.
EPS0_CHECK = """
import math as _math
async def _eps0_check(name):
    arrays = npy.read_npz(await fetch_bytes(f"/fixtures/edge/{name}.npz"))
    x, w = floats(arrays["in0"]), floats(arrays["weight"])
    b = floats(arrays["bias"]) if "bias" in arrays else None
    n = arrays["in0"].shape[-1]
    want = []
    for r in range(len(x) // n):
        row = x[r * n:(r + 1) * n]
        if b is not None:
            m = sum(row) / n
            row = [v - m for v in row]
        s = _math.sqrt(sum(v * v for v in row) / n)
        want += [v / s * w[j] + (b[j] if b is not None else 0.0) for j, v in enumerate(row)]
    rt = await runtime()
    program = await rt.load_program(await fetch_bytes(f"/fixtures/edge/{name}.pte"))
    try:
        y, = await program.load_method().execute([arrays["in0"]])
    finally:
        program.close()
    got = floats(y)
    diffs = [abs(g - v) for g, v in zip(got, want)]
    return {"finite": all(_math.isfinite(g) for g in got), "n": len(got), "want_n": len(want),
            "max_abs": max(diffs), "worst_excess": max(d - (1e-6 + 1e-5 * abs(v))
                                                        for d, v in zip(diffs, want))}
"""


def judge(job: dict, res: dict) -> tuple[str, float | None, str]:
    """(PASS / FAIL / UNSUPPORTED / ERROR, max abs error, detail)."""
    if "error" in res:
        kind = "UNSUPPORTED" if res["error"] == "UnsupportedError" else "ERROR"
        return kind, None, f"{res['error']}: {res['message'][:300]}"
    r, tol = res["report"], job["tol"]
    if job["kind"] == "fixture":
        errs = r["errors"]
        worst = max((a for a, _ in errs), default=0.0)
        ok = r["shapes"] == r["want_shapes"] and all(a <= tol or b <= tol for a, b in errs)
        detail = f"abs/rel per output {[[float(f'{a:.3g}'), float(f'{b:.3g}')] for a, b in errs]}"
        if r["shapes"] != r["want_shapes"]:
            detail += f" shapes {r['shapes']} want {r['want_shapes']}"
        return ("PASS" if ok else "FAIL"), worst, detail
    if job["kind"] == "decoder":
        if "unsupported" in r:
            return "UNSUPPORTED", None, r["unsupported"][:300]
        errs = r["errors"]
        worst = max(errs + [r["reset_error"]])
        problems = []
        if len(errs) != job["steps"]:
            problems.append(f"{len(errs)} steps, want {job['steps']}")
        if any(e > tol for e in errs):
            problems.append(f"step errors {errs}")
        if r["argmax"] != r["want_argmax"]:
            problems.append("argmax differs from torch")
        if r["reset_error"] > tol:
            problems.append(f"reset error {r['reset_error']}")
        if r["state"] and not r["skip_step0_error"] > 10 * max(errs) + 1e-3:
            problems.append(f"state does not carry over: skip_step0_error {r['skip_step0_error']}")
        detail = "; ".join(problems) or f"{len(errs)} steps, argmax = torch's, reset ok"
        return ("FAIL" if problems else "PASS"), worst, detail
    if job["kind"] == "eps0":
        ok = r["finite"] and r["n"] == r["want_n"] and r["worst_excess"] <= 0
        return ("PASS" if ok else "FAIL"), r["max_abs"], (
            f"vs float64 reference (rtol 1e-5, atol 1e-6): finite={r['finite']}, "
            f"worst |err| - (1e-6 + 1e-5|want|) = {r['worst_excess']:.3g}")
    ok = r["first"] is None and all(c == 0 for row in r["mismatches"] for c in row)
    return ("PASS" if ok else "FAIL"), None, (f"{r['calls']} calls, "
                                              f"first mismatch: {r['first']}")


# ---------------------------------------------------------------- static server
class _Handler(SimpleHTTPRequestHandler):
    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, ".wasm": "application/wasm",
                      ".mjs": "text/javascript", ".js": "text/javascript",
                      ".json": "application/json", ".whl": "application/zip",
                      ".zip": "application/zip"}
    mounts: list = []

    def translate_path(self, path):
        path = urllib.parse.unquote(urllib.parse.urlsplit(path).path)
        for prefix, folder in self.mounts:
            if path.startswith(prefix):
                parts = [p for p in path[len(prefix):].split("/") if p not in ("", ".", "..")]
                return str(folder.joinpath(*parts))
        return "/nonexistent"

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, *args):
        pass


def serve_mounts(mounts: list) -> ThreadingHTTPServer:
    """A static server on a free local port, in a thread: ``mounts`` (URL prefix, folder),
    the first prefix that matches serves (so the longer ones go first)."""
    _Handler.mounts = mounts
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def serve(dist: Path) -> ThreadingHTTPServer:
    return serve_mounts([("/pyodide/", dist.resolve()), ("/fixtures/", FIXTURES),
                         ("/", ROOT / "web")])


# ---------------------------------------------------------------- DevTools protocol over a pipe
def python_expression(code: str) -> str:
    """The JS expression that runs ``code`` with runPythonAsync in the harness page:
    {value} (the code's value) or {error} (the Python traceback's text)."""
    return ("(async (code) => { const py = await window.pyodideReady;"
            " try { return {value: await py.runPythonAsync(code)}; }"
            " catch (e) { return {error: String(e && e.message || e)}; } })"
            f"({json.dumps(code)})")


class Chrome:
    def __init__(self, chrome: str, flags: list[str], log_path: str):
        self._r, w_chrome = os.pipe()
        r_chrome, self._w = os.pipe()

        def child_fds():  # chrome reads fd 3, writes fd 4
            a, b = os.dup(r_chrome), os.dup(w_chrome)
            os.dup2(a, 3)
            os.dup2(b, 4)

        env = dict(os.environ)
        if "CHROME_LD" in env:
            env["LD_LIBRARY_PATH"] = env["CHROME_LD"]
        self.proc = subprocess.Popen(
            [chrome, "--no-sandbox", "--remote-debugging-pipe", "--no-first-run",
             "--user-data-dir=/tmp/h200-fixtures-profile", *flags, "about:blank"],
            close_fds=False, preexec_fn=child_fds, env=env,
            stdout=subprocess.DEVNULL, stderr=open(log_path, "w"))
        os.close(r_chrome)
        os.close(w_chrome)
        self._buf, self._id, self.session = b"", 0, None
        self.console: list[str] = []

    def send(self, method, params=None, session=True):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        return self._id

    def call(self, method, params=None, timeout=60.0, session=True):
        want = self.send(method, params, session)
        deadline = time.time() + timeout
        while True:
            while b"\0" in self._buf:
                raw, self._buf = self._buf.split(b"\0", 1)
                m = json.loads(raw)
                if m.get("method") == "Runtime.consoleAPICalled":
                    a = m["params"]["args"]
                    self.console.append(m["params"]["type"] + ": " + " ".join(
                        str(x.get("value", x.get("description"))) for x in a))
                elif m.get("method") == "Runtime.exceptionThrown":
                    self.console.append("exception: " + json.dumps(m["params"])[:2000])
                if m.get("id") == want:
                    if "error" in m:
                        raise RuntimeError(f"{method}: {m['error']}")
                    return m["result"]
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError(f"{method}: no reply in {timeout:.0f} s")
            import select
            ready, _, _ = select.select([self._r], [], [], min(left, 5.0))
            if ready:
                chunk = os.read(self._r, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the pipe (see the Chromium log)")
                self._buf += chunk

    def open(self, url: str):
        t = self.call("Target.createTarget", {"url": "about:blank"}, session=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": t, "flatten": True},
                                 session=False)["sessionId"]
        self.call("Runtime.enable")
        self.call("Page.enable")
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expr: str, timeout=120.0):
        r = self.call("Runtime.evaluate", {"expression": expr, "awaitPromise": True,
                                           "returnByValue": True}, timeout=timeout)
        if "exceptionDetails" in r:
            raise RuntimeError("page: " + json.dumps(r["exceptionDetails"])[:3000])
        return r["result"].get("value")

    def python(self, code: str, timeout=180.0):
        """runPythonAsync(code) in the page; its value (a str here), or raises with the traceback."""
        out = self.evaluate(python_expression(code), timeout)
        if "error" in out:
            raise RuntimeError(out["error"])
        return out.get("value")

    def wait_for_pyodide(self, on_ready: str = "return true;") -> float:
        """Wait until the harness page has started Pyodide (window.pyodideReady) and it has
        booted, then run the JS statements ``on_ready``; the seconds the boot took."""
        t0 = time.time()
        self.evaluate("new Promise(r => { const t = () => window.pyodideReady ? r(1)"
                      " : setTimeout(t, 50); t(); })", 60)
        self.evaluate(f"window.pyodideReady.then(() => {{ {on_ready} }})", 120)
        return time.time() - t0

    def finish(self, summary: dict, httpd, tail: int) -> None:
        """The end of every run, failed or not: the console's last ``tail`` lines into
        ``summary``, then Chromium and the server stopped."""
        summary["console_tail"] = self.console[-tail:]
        self.close()
        httpd.shutdown()

    def close(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


ADAPTER_JS = """(async () => { const a = await navigator.gpu.requestAdapter();
  if (!a) return null; const i = a.info || {};
  return {vendor: i.vendor, architecture: i.architecture, device: i.device,
          description: i.description, features: [...a.features].sort(),
          // chromium-experimental-subgroup-matrix's shapes and types (issue 20 item 4)
          subgroupMatrixConfigs: [...(i.subgroupMatrixConfigs || [])].map(c => ({
            component: c.componentType, result: c.resultComponentType,
            M: Number(c.M), N: Number(c.N), K: Number(c.K)})),
          maxBufferSize: a.limits.maxBufferSize,
          maxStorageBufferBindingSize: a.limits.maxStorageBufferBindingSize,
          userAgent: navigator.userAgent}; })()"""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chrome", required=True)
    ap.add_argument("--dist", required=True, type=Path)
    ap.add_argument("--out", default="h200-browser-fixtures.json")
    ap.add_argument("--log", default="/tmp/h200-chromium.log")
    ap.add_argument("--only", default="", help="run the programs whose name holds one of "
                    "these comma-separated substrings")
    ap.add_argument("flags", nargs="*")
    args = ap.parse_args(argv)

    only = args.only.split(",")
    todo = [j for j in jobs() if any(part in j["name"] for part in only)]
    httpd = serve(args.dist)
    url = f"http://127.0.0.1:{httpd.server_address[1]}/harness.html?indexURL=/pyodide/"
    chrome = Chrome(args.chrome, args.flags, args.log)
    summary = {"url": url, "flags": args.flags, "results": []}
    rc = 1
    try:
        chrome.open(url)
        summary["boot_s"] = chrome.wait_for_pyodide()
        summary["boot_stages"] = chrome.evaluate("window.bootStages")
        summary["adapter_js"] = chrome.evaluate(ADAPTER_JS)
        print(f"booted in {summary['boot_s']:.1f} s; adapter (JS): "
              f"{json.dumps({k: v for k, v in (summary['adapter_js'] or {}).items() if k != 'features'})}")
        print(f"features: {(summary['adapter_js'] or {}).get('features')}")
        for support in ("tests/browser/page_support.py", "tests/support/decoder_check.py",
                        "tests/support/stepwise_check.py"):
            chrome.python((ROOT / support).read_text() + "\nNone")
        chrome.python(EPS0_CHECK + "\nNone")
        summary["adapter"] = json.loads(chrome.python(
            "import json as _json\n_json.dumps((await runtime()).adapter.summary(), default=repr)"))
        print(f"pte_webgpu adapter: {summary['adapter']}")
        counts = {}
        for job in todo:
            try:
                res = json.loads(chrome.python(page_code(job)))
                verdict, worst, detail = judge(job, res)
            except Exception as e:  # a hang or a broken page: stop here, say where
                res, verdict, worst, detail = {}, "ERROR", None, f"{type(e).__name__}: {e}"[:2000]
            counts[verdict] = counts.get(verdict, 0) + 1
            summary["results"].append({**job, "verdict": verdict, "max_abs_error": worst,
                                       "detail": detail, "raw": res})
            err = "-" if worst is None else f"{worst:.3g}"
            print(f"{verdict:11s} {job['name']:45s} max_abs={err:10s} tol={job['tol']:g} "
                  f"{res.get('seconds', 0):.2f}s {detail[:200]}")
            if verdict == "ERROR" and "traceback" in res:
                print(res["traceback"])
            if isinstance(detail, str) and detail.startswith(("TimeoutError", "RuntimeError: Chromium")):
                print("stopping: the page no longer answers")
                break
        summary["counts"] = counts
        print(f"counts: {counts} of {len(todo)} jobs")
        rc = 0 if set(counts) <= {"PASS", "UNSUPPORTED"} and sum(counts.values()) == len(todo) else 1
    except Exception as e:
        summary["fatal"] = f"{type(e).__name__}: {e}"
        print(f"FATAL: {summary['fatal']}")
    finally:
        chrome.finish(summary, httpd, 200)
        Path(args.out).write_text(json.dumps(summary, indent=1, default=repr))
        print(f"wrote {args.out}")
    return rc


if __name__ == "__main__":
    sys.exit(main())
