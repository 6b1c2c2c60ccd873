"""``execute(profile=True)`` in the page: where Chromium offers timestamps inside passes
(chromium-experimental-timestamp-query-inside-passes, developer features on) the step is
timed in its own passes with a timestamp after each dispatch (GPUComputePassEncoder.
writeTimestamp), else a timed pass per dispatch; either way the outputs are an unprofiled
execute's and every op has its row (tests/native/test_profile_stamps.py natively)."""

import pytest

pytestmark = pytest.mark.browser


def test_profile_in_the_page_times_every_op(decoder_page):
    got = decoder_page.run_python("""
import struct as _struct
from pte_webgpu.model.tensor import Tensor as _T
_rt = await runtime()
_program = await _rt.load_program(await fetch_bytes('/fixtures/decoders/llama_dynamic_rope.pte'))
try:
    _m = _program.load_method("forward")
    _ins = [_T(_struct.pack("<6q", *range(3, 9)), (1, 6), "int64"),
            _T(_struct.pack("<q", 0), (1,), "int64")]
    _plain = (await _m.execute(_ins, as_numpy=False))[0]
    _got = (await _m.execute(_ins, as_numpy=False, profile=True))[0]
    _r = {"same": _plain.tobytes() == _got.tobytes(), "rows": _m.last_profile,
          "ops": [k["op"] for k in _m.kernels],
          "stamped": _rt.device.info.traits.timestamps_in_pass,
          "timestamps": "timestamp-query" in _rt.adapter.features}
finally:
    _program.close()
_r
""")
    assert got["same"]
    rows = got["rows"]
    assert [r["op"] for r in rows] == got["ops"]
    assert all(r["us"] >= 0 for r in rows)
    assert all(r["us"] == 0 for r in rows if not r["dispatches"])
    if got["timestamps"]:
        assert sum(r["us"] for r in rows) > 0
    print("timestamps inside passes:", got["stamped"])
