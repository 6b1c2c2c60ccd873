"""Double arguments beyond float32 (eps, alpha, clamp bounds, scalar operands of 1e39 or
1e308) in real exported programs: torch's float32 result where torch computes one (a
tensor cast: inf), a typed error where torch refuses (alpha and clamp bounds:
``Scalar.to<float>()`` raises "value cannot be converted to type float without
overflow"). Never Python's OverflowError.

Programs: tests/fixtures/edge (made by make_edge.py; references are eager torch float32)
and, for what torch refuses to export, exported programs with their Double edited.
"""

import json
import struct

import numpy as np
import pte_webgpu
import pytest

from tests.support.fixture_index import FIXTURES
from tests.support.gpu_thread import run_sync

EDGE = json.loads((FIXTURES / "edge" / "index.json").read_text())
DOUBLES = [e["name"] for e in EDGE if "1e39" in e["name"] or "1e308" in e["name"]]


def _run(runtime, pte: bytes, inputs):
    async def go():
        program = await runtime.load_program(pte)
        try:
            return await program.load_method().execute(inputs)
        finally:
            program.close()
    return run_sync(go())


def _edited(name: str, old: float, new: float) -> bytes:
    """The program ``name`` with its one Double ``old`` replaced by ``new``."""
    pte = (FIXTURES / f"{name}.pte").read_bytes()
    old_bytes = struct.pack("<d", old)
    assert pte.count(old_bytes) == 1, f"{name}: Double {old} is not in the file exactly once"
    return pte.replace(old_bytes, struct.pack("<d", new))


@pytest.mark.parametrize("name", DOUBLES)
def test_double_beyond_float32_gives_torchs_float32_result(runtime, name):
    ref = np.load(FIXTURES / "edge" / f"{name}.npz")
    (got,) = _run(runtime, (FIXTURES / "edge" / f"{name}.pte").read_bytes(), [ref["in0"]])
    np.testing.assert_allclose(got, ref["out0"], rtol=1e-5, atol=1e-5)  # inf/NaN where torch
    assert runtime.device.live_buffer_count == 0


@pytest.mark.parametrize("value", [1e39, -1e39, 1e308, float.fromhex("0x1.fffffe1p+127")])
def test_alpha_beyond_float32_is_refused_as_torch_refuses_it(runtime, value):
    pte = _edited("extra/add_alpha2.5_4x8", 2.5, value)
    ref = np.load(FIXTURES / "extra" / "add_alpha2.5_4x8.npz")
    with pytest.raises(pte_webgpu.FormatError, match=r"aten.add.Tensor: alpha .* does not fit "
                                                     r"float32 \(torch refuses it too"):
        _run(runtime, pte, [ref["in0"], ref["in1"]])
    assert runtime.device.live_buffer_count == 0


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"),
                                   float.fromhex("0x1.fffffep+127")])
def test_alpha_at_the_edge_of_float32_computes(runtime, value):
    """inf, NaN and FLT_MAX itself are accepted by torch: x + alpha * y in float32."""
    pte = _edited("extra/add_alpha2.5_4x8", 2.5, value)
    ref = np.load(FIXTURES / "extra" / "add_alpha2.5_4x8.npz")
    x, y = ref["in0"], ref["in1"]
    (got,) = _run(runtime, pte, [x, y])
    with np.errstate(over="ignore", invalid="ignore"):
        want = x + np.float32(value) * y
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("bound", [0.5, -0.5])
def test_clamp_bound_beyond_float32_is_refused(runtime, bound):
    pte = _edited("extra/activations_3x17", bound, 1e39 if bound > 0 else -1e308)
    ref = np.load(FIXTURES / "extra" / "activations_3x17.npz")
    with pytest.raises(pte_webgpu.FormatError, match=r"clamp m(in|ax) -?1e\+(39|308) does not "
                                                     r"fit float32") as e:
        _run(runtime, pte, [ref["in0"]])
    assert "aten.clamp.default" in str(e.value)
    assert runtime.device.live_buffer_count == 0



def test_no_overflow_error_from_packing_any_double():
    """Every float a params uniform packs goes through f32.pack: no OverflowError."""
    from pte_webgpu.model import f32

    for v in (1e39, -1e39, 1e308, -1e308, float("inf"), float("nan"), 5e-324):
        (back,) = struct.unpack("<f", f32.pack("<f", v))
        assert back == f32.to_f32(v) or (back != back and v != v)
    assert struct.unpack("<IfI", f32.pack("<IfI", 1, 1e39, 2)) == (1, float("inf"), 2)
    assert struct.unpack("<2f", f32.pack("<2f", -1e308, 1.5)) == (float("-inf"), 1.5)
