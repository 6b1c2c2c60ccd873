"""Host time of encoding one decode step in headless Chromium: op by op from Python
(``BrowserDevice.js_replay = False``, three Pyodide-to-JS calls per dispatch) against the
one-call JS encode (gpu/js_replay.py).

    python bench/encode_browser.py [MODEL.pte] [-n 100] [--output FILE.json]

MODEL: a llama-style program (tokens int64[1, n], input_pos int64[1]); default
build/llm/smollm2-135m-instruct.pte (``make llm``), or e.g.
tests/fixtures/decoders/llama_dynamic_rope.pte. The page prefills 5 tokens and runs one
greedy step fed on the GPU (``LastArgmax``), so the recording timed is the one a decode
step submits (the method's steps with one-token grids, the feed copy, the argmax). Per
path: ms per encode (createCommandEncoder, the recording, finish; nothing submitted),
blocks interleaved (performance.now steps by 100 µs in this page: a block of n encodes
is timed whole); the JS path's first encode (building its arrays); per decode execute,
its host part (until ``execute(wait=False)`` returns, the submit made) and the time until
its token is read (GPU included: on SwiftShader that dominates); then one more execute,
untimed, whose WebGPU calls made from Python and from the JS encode are counted
(bench/gpu_calls.js).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_MODEL = REPO / "build" / "llm" / "smollm2-135m-instruct.pte"

_PAGE = r'''
import array, js
from pyodide.http import pyfetch
import pte_webgpu
from pte_webgpu.gpu.recording import Dispatch
from pte_webgpu.runtime.method import gpu_work
from pte_webgpu.runtime.readout import LastArgmax

js.eval(GPU_CALLS_JS)
_now, _log = js.performance.now, js.gpuLog


def _t(values, shape):
    return pte_webgpu.Tensor(array.array("q", values), shape, "int64")


async def load(url):
    global _rt, _method, _dev, _rec, _pos
    _rt = await pte_webgpu.Runtime.create()
    t0 = _now()
    data = await (await pyfetch(url)).bytes()
    program = await _rt.load_program(data)
    del data
    _method = program.load_method("forward")
    load_ms = _now() - t0
    _dev = _rt.device
    await _method.execute([_t([1, 2, 3, 4, 5], (1, 5)), _t([0], (1,))], argmax=True)
    await (await _method.execute([LastArgmax(), _t([5], (1,))], argmax=True, wait=False))
    _pos = 6
    _rec = gpu_work(_method).pick_recording
    steps = _rec.steps
    return {"adapter": _dev.info.summary(), "load_ms": load_ms, "steps": len(steps),
            "dispatches": sum(type(s) is Dispatch for s in steps),
            "running": sum(type(s) is Dispatch and all(s.grid) for s in steps)}


def encode_ms(js_replay, n):
    _dev.js_replay = js_replay
    t0 = _now()
    for _ in range(n):
        _dev.encode_only(_rec)
    return (_now() - t0) / n


def first_js_encode_ms():
    _dev.js_replay = True
    _rec.encoded = None
    t0 = _now()
    _dev.encode_only(_rec)
    return _now() - t0


async def decode(js_replay, n):
    """n greedy steps fed on the GPU, ms of each; then one more, untimed, whose WebGPU
    calls are logged (the log's stack walks cost more than the encode)."""
    global _pos
    _dev.js_replay = js_replay
    times, submits = [], []
    for k in range(n + 1):
        _log.clear()
        _log.on = k == n
        t0 = _now()
        pending = await _method.execute([LastArgmax(), _t([_pos], (1,))], argmax=True,
                                        wait=False)
        submits.append(_now() - t0)
        await pending
        times.append(_now() - t0)
        _log.on = False
        _pos += 1
    times, submits = times[:n], submits[:n]
    return {"ms": times, "submit_ms": submits, "calls_from_python": int(_log.fromPython),
            "calls_from_js_encode": int(_log.fromEncode)}
'''


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run(model: Path, n: int, blocks: int, steps: int) -> dict:
    from pte_webgpu.chromium.dist import ensure_dist
    from pte_webgpu.chromium.server import StaticServer
    from pte_webgpu.chromium.session import BrowserSession

    model = model.resolve()
    dist = ensure_dist(REPO, log=_log)
    mounts = {"/": REPO / "web", "/pyodide/": dist, "/model/": model.parent}
    with StaticServer(mounts) as server, \
            BrowserSession(server.url, timeout_ms=1_800_000) as session:
        _log("page booted")
        session.run_python(f"GPU_CALLS_JS = {(HERE / 'gpu_calls.js').read_text()!r}")
        session.run_python(_PAGE)
        t0 = time.perf_counter()
        info = session.run_python(f"await load('/model/{model.name}')")
        _log(f"loaded {model.name} in {time.perf_counter() - t0:.1f} s: {info}")
        first = session.run_python("first_js_encode_ms()")
        encode = {"python": [], "js": []}
        for _ in range(blocks):  # interleaved: drift on a shared machine hits both alike
            encode["python"].append(session.run_python(f"encode_ms(False, {n})"))
            encode["js"].append(session.run_python(f"encode_ms(True, {n})"))
        decode = {way: session.run_python(f"await decode({way == 'js'}, {steps})")
                  for way in ("python", "js", "python", "js")}  # the later pair counts
        errors = [m for m in session.console_messages if m.type == "error"] + session.page_errors
        for e in errors[:10]:
            _log(f"  page: {e}")
    return {"model": model.name, **info, "first_js_encode_ms": first,
            "encode_ms": {k: {"median": statistics.median(v), "blocks": v}
                          for k, v in encode.items()},
            "decode": {k: {**v, "median_ms": statistics.median(v["ms"]),
                           "median_submit_ms": statistics.median(v["submit_ms"])}
                       for k, v in decode.items()}}


def report(r: dict) -> str:
    e, d = r["encode_ms"], r["decode"]
    return "\n".join([
        f"{r['model']} on {r['adapter']}: {r['steps']} steps, {r['dispatches']} dispatches "
        f"({r['running']} with work) per decode execute",
        f"encode, ms (median of {len(e['python']['blocks'])} blocks): Python op by op "
        f"{e['python']['median']:.3f}, one JS call {e['js']['median']:.3f} "
        f"({e['python']['median'] / e['js']['median']:.1f}x); the JS path's first encode "
        f"(arrays built) {r['first_js_encode_ms']:.2f}",
        f"WebGPU calls per decode execute, from Python / from the JS encode: Python path "
        f"{d['python']['calls_from_python']} / {d['python']['calls_from_js_encode']}, JS path "
        f"{d['js']['calls_from_python']} / {d['js']['calls_from_js_encode']}",
        f"decode execute, ms median: host part (execute(wait=False) until it returns, the "
        f"submit made) Python path {d['python']['median_submit_ms']:.2f}, JS path "
        f"{d['js']['median_submit_ms']:.2f}; until the token is read (GPU included) "
        f"{d['python']['median_ms']:.1f}, {d['js']['median_ms']:.1f}"])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    p.add_argument("-n", type=int, default=50, help="encodes per block (default 50)")
    p.add_argument("--blocks", type=int, default=6)
    p.add_argument("--steps", type=int, default=5, help="decode executes per path")
    p.add_argument("--output", metavar="FILE.json")
    a = p.parse_args()
    if not a.model.is_file():
        _log(f"{a.model} not found (make llm)")
        return 2
    result = run(a.model, a.n, a.blocks, a.steps)
    print(report(result))
    if a.output:
        Path(a.output).write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
