"""The browser's one-call JS encode of a recording (gpu/js_replay.py) against the
op-by-op Python encode, in Chromium: a decoder with a dynamic token count (prefill of 5,
then single-token steps, then steps fed on the GPU by the last argmax) run once each
way. Every WebGPU encoder call is logged (objects by identity, numbers as they are) by
wrapping the GPU* prototypes (bench/gpu_calls.js); each execute must make the same calls
both ways, and the outputs must match eager torch both ways. The log also says which
calls Python made and which the JS encode made (by the stack), so the interop saving is
measured, not assumed."""

from pathlib import Path

import pytest

from pte_webgpu.runtime.readout import in_flight

from tests.support.decoders import INDEX

STAGINGS = in_flight() + 1  # a method's picker's staging buffers (runtime/readout.py)

pytestmark = pytest.mark.browser

HERE = Path(__file__).parent
SUPPORT = (HERE / "page_support.py").read_text()
NAME = "llama_dynamic_rope"

WRAP_JS = (HERE.parents[1] / "bench" / "gpu_calls.js").read_text()

PAGE = r"""
import js
from pte_webgpu.app import steps as _steps
from pte_webgpu.runtime.method import gpu_work
from pte_webgpu.runtime.readout import LastArgmax, in_flight

STAGINGS = in_flight() + 1

js.eval(WRAP_JS)
_log = js.gpuLog
_arrays = npy.read_npz(await fetch_bytes('/fixtures/decoders/NAME.npz'))
_mode, _calls = _steps.plan_calls(_arrays)
_rt = await pte_webgpu.Runtime.create(options=OPTIONS)
_program = await _rt.load_program(await fetch_bytes('/fixtures/decoders/NAME.pte'))


async def _logged(coro):
    _log.clear()
    _log.on = True
    try:
        out = await coro
    finally:
        _log.on = False
    return out, {"calls": list(_log.calls), "py": int(_log.fromPython),
                 "js": int(_log.fromEncode)}


async def _one_way(js_replay):
    _rt.device.js_replay = js_replay
    method.reset()
    runs, errors, ids = [], [], []
    for k, inputs in enumerate(_calls):
        outs, log = await _logged(method.execute(inputs, as_numpy=False))
        log["skipped"] = [i for i, s in enumerate(gpu_work(method).recording.steps)
                          if type(s).__name__ == "Dispatch" and not all(s.grid)]
        errors.append(max_errors(outs[0], _arrays[f"step{k}_out0"])[0])
        runs.append(log)
    # greedy steps chained on the GPU: the argmax recording, with a feed copy from the 2nd
    # on (STAGINGS of them: the staging buffers taking turns end where they began)
    method.reset()
    (first,), log = await _logged(method.execute(_calls[0], argmax=True))
    runs.append(log)
    ids.append(first)
    for n in range(STAGINGS - 1):
        fed = LastArgmax()
        pos = [len(_calls[0][0].tolist()[0]) + n]
        pending, log = await _logged(method.execute([fed, pos], argmax=True, wait=False))
        runs.append(log)
        ids.append((await pending)[0])
    return {"runs": runs, "errors": errors, "ids": ids}


try:
    method = _program.load_method("forward")
    _dispatches = sum(type(s).__name__ == "Dispatch" for s in gpu_work(method).recording.steps)
    _report = {"js": await _one_way(True), "py": await _one_way(False), "dispatches": _dispatches}
finally:
    _log.restore()
    _rt.close()
_report
"""


# Prefill and a one-token step run different attention dispatches (their grids go empty
# in turn): with the RoPE folded, prefill turns q and k by the rope's kernel first and a
# decode step reads them turned (rows form); with sdpa "split" a decode step takes the
# flash-decoding pair instead
@pytest.mark.parametrize("options", [{}, {"variants": {"sdpa": "split"}}])
def test_js_encode_makes_the_python_encodes_calls(browser_session, options):
    page = browser_session
    page.run_python(SUPPORT)
    page.run_python(f"WRAP_JS = {WRAP_JS!r}")
    report = page.run_python(PAGE.replace("NAME", NAME).replace("OPTIONS", repr(options)))
    js, py = report["js"], report["py"]
    tol = INDEX[NAME]["tolerance"]
    assert len(js["runs"]) == len(py["runs"]) == INDEX[NAME]["steps"] + STAGINGS
    # outputs equal to eager torch both ways, the greedy ids too
    assert max(js["errors"]) <= tol and max(py["errors"]) <= tol, report
    # (the torch reference holds the first `steps` greedy ids)
    want = INDEX[NAME]["argmax"]
    assert js["ids"] == py["ids"] and len(js["ids"]) == STAGINGS, (js["ids"], py["ids"])
    assert js["ids"][:len(want)] == want[:STAGINGS], (js["ids"], want)
    for k, (a, b) in enumerate(zip(js["runs"], py["runs"])):
        assert a["calls"] == b["calls"], f"execute {k}: the JS encode differs"
        # the JS path makes the recording's calls from JS; Python makes a few (encoder,
        # output copies, submit, writes, map), the first argmax execute's setup too (its
        # STAGINGS staging buffers among it)
        assert b["js"] == 0 and a["js"] > 0 and a["py"] <= 27 + STAGINGS, (k, a["py"], a["js"],
                                                                          b["py"])
    # the sizes changed what was encoded (prefill of 5 rows, then 1): grids were followed
    calls = [r["calls"] for r in js["runs"]]
    assert calls[0] != calls[1] and calls[1] == calls[2]
    dispatches = sum(c.startswith("dispatchWorkgroups") for c in calls[1])
    # (the two-layer decoder's decode step: 19 dispatches, its norms folded into linears)
    assert js["runs"][1]["js"] >= 3 * dispatches >= 3 * 15, (dispatches, report["dispatches"])
    skipped = [r["skipped"] for r in js["runs"][:2]]
    assert skipped[0] != skipped[1], skipped
