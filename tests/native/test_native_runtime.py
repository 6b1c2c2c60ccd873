"""The same runtime natively through wgpu (lavapipe here): fixtures match torch."""

import numpy as np
import pytest

from tests.support.fixture_index import FIXTURES, INDEX, runnable, tolerance
from tests.support.gpu_thread import run_fixture, run_sync


@pytest.mark.parametrize("entry", [e for e in INDEX if runnable(e)], ids=lambda e: e["name"])
def test_fixture_matches_torch_natively(runtime, entry):
    outs, wants = run_fixture(runtime, entry["name"], entry.get("ptd_files", []))
    tol = tolerance(entry)
    assert len(outs) == len(wants)
    for got, want in zip(outs, wants):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   atol=tol, rtol=tol)
    assert runtime.device.live_buffer_count == 0


def test_runtime_options_force_a_kernel_variant():
    """Runtime.create(options=...) reaches the op builders; the choice is recorded."""
    import pte_webgpu

    async def go():
        rt = await pte_webgpu.Runtime.create("native", options={"variants": {"rms_norm": "tree-64"}})
        try:
            program = await rt.load_program((FIXTURES / "rmsnorm_4x128_eps1e-6.pte").read_bytes())
            kernels = program.load_method().kernels
            program.close()
            return kernels
        finally:
            rt.close()

    kernels = run_sync(go())
    assert [(k["op"], k["variant"], k["picked"]) for k in kernels] == \
        [("et_vk.rms_norm.default", "tree-64", "forced")]


FP16 = [e for e in INDEX if "fp16" in e["name"]]


@pytest.mark.parametrize("float16", ["auto", "f32"])
@pytest.mark.parametrize("entry", FP16, ids=lambda e: e["name"])
def test_float16_programs_in_both_storage_modes(entry, float16):
    """With shader-f16 (lavapipe has it) float16 stays f16 where every op allows it;
    {"float16": "f32"} widens it. Both match torch within the fp16 tolerance."""
    import pte_webgpu

    async def go():
        rt = await pte_webgpu.Runtime.create("native", options={"float16": float16})
        try:
            program = await rt.load_program((FIXTURES / f"{entry['name']}.pte").read_bytes())
            ref = np.load(FIXTURES / f"{entry['name']}.npz")
            ins = [ref[k] for k in sorted(ref.files) if k.startswith("in")]
            method = program.load_method()
            outs = await method.execute(ins)
            half = program._storage.half
            notes = method.notes
            program.close()
            return outs, [ref[k] for k in sorted(ref.files) if k.startswith("out")], half, notes, \
                "shader-f16" in rt.adapter.features
        finally:
            rt.close()

    outs, wants, half, notes, has_f16 = run_sync(go())
    # f16 storage needs the feature, one dtype per op, and no dtype change at a delegate
    # boundary: force_fp16 (f32 plan, f16 graph) and the unfused graph's casts stay wide.
    expect_half = float16 == "auto" and has_f16 and entry["name"] in (
        "add_fp16_2x3x4", "rmsnorm_fp16_1x8x64_eps1e-6", "extra/minmax_fp16_4x8_8",
        "extra/unary_table0_fp16_4x32")
    assert half == expect_half
    assert any(("stored as float16" if half else "stored and computed as float32") in n
               for n in notes)
    for got, want in zip(outs, wants):
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   atol=1e-2, rtol=1e-2)


def _run_embedding(runtime, inputs, as_numpy=None):
    async def go():
        pte = (FIXTURES / "extra" / "embedding_100x16_2x5.pte").read_bytes()
        program = await runtime.load_program(pte)
        try:
            return await program.load_method().execute(inputs, as_numpy=as_numpy)
        finally:
            program.close()
    return run_sync(go())


def test_int64_inputs_every_host_form(runtime):
    """int64 token ids are narrowed to int32 at upload, from numpy, bytes or array('q')."""
    from array import array

    from pte_webgpu import Tensor

    ref = np.load(FIXTURES / "extra" / "embedding_100x16_2x5.npz")
    ids, want = ref["in0"], ref["out0"]
    forms = [ids, (ids.tobytes(), ids.shape), (array("q", ids.reshape(-1).tolist()), ids.shape),
             Tensor(ids.tobytes(), ids.shape, "int64")]
    for x in forms:
        (got,) = _run_embedding(runtime, [x], as_numpy=True)
        np.testing.assert_array_equal(got, want)
    (got,) = _run_embedding(runtime, [ids], as_numpy=False)  # the numpy-free output path
    assert got.dtype.name == "float32" and got.tolist() == want.tolist()
    assert runtime.device.live_buffer_count == 0


def test_int64_inputs_beyond_int32_and_int32_inputs_are_refused(runtime):
    import pte_webgpu

    ids = np.zeros((2, 5), np.int64)
    ids[1, 3] = 1 << 31
    with pytest.raises(pte_webgpu.InputError, match=r"input 0: int64 value 2147483648 is "
                                                    r"outside int32's range"):
        _run_embedding(runtime, [ids])
    with pytest.raises(pte_webgpu.InputError, match="expected dtype int64, got int32"):
        _run_embedding(runtime, [ids.astype(np.int32)])
    assert runtime.device.live_buffer_count == 0
