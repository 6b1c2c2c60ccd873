"""The mask and KV-cache ops (ops/{bmm,copying,mixed,fill,any_reduce,index_put}.py,
mul.Scalar) natively, on programs exported by tests/fixtures/masks_kv/make_masks_kv.py, against
eager torch's stored outputs: ``masks`` (the causal-mask chain with NaN, -inf and -0
inputs, cat, expand_copy, bmm; all delegated) and ``kv_cache`` (a plain-torch KV cache
written by the plan kernels index_put + copy_, read by F.sdpa with a bool mask row:
index.Tensor_out, mul.Scalar, any, scalar_tensor), six steps on one loaded method."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from pte_webgpu.formats import open_program
from pte_webgpu.reference import interpreter as reference

from tests.support.gpu_thread import run_sync
from tests.support.graph import G

HERE = Path(__file__).parent.parent / "fixtures" / "masks_kv"


def _steps(arrays) -> list[tuple[list, list]]:
    prefixes = sorted({k.split("_")[0] + "_" for k in arrays if k.startswith("step")},
                      key=lambda p: int(p[4:-1])) or [""]
    def pick(p, kind):
        return [arrays[f"{p}{kind}{i}"] for i in range(20) if f"{p}{kind}{i}" in arrays]
    return [(pick(p, "in"), pick(p, "out")) for p in prefixes]


def check_close(got, want, tol=1e-5):
    """NaN where torch has NaN, infinities and zeros (with their sign) exact, else close."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape
    assert np.array_equal(np.isnan(got), np.isnan(want))
    exact = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(got[exact], want[exact])
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]))
    ok = ~np.isnan(want) & ~exact
    np.testing.assert_allclose(got[ok], want[ok], rtol=tol, atol=tol)


def _load(name):
    pte = (HERE / f"{name}.pte").read_bytes()
    arrays = dict(np.load(io.BytesIO((HERE / f"{name}.npz").read_bytes())))
    return pte, _steps(arrays)


@pytest.mark.parametrize("name", ["masks", "kv_cache"])
def test_matches_eager_torch_step_by_step(runtime, name):
    pte, steps = _load(name)

    async def go():
        program = await runtime.load_program(pte)
        try:
            method = program.load_method()
            return [await method.execute(ins) for ins, _ in steps]
        finally:
            program.close()

    for k, (outs, (_, want)) in enumerate(zip(run_sync(go()), steps)):
        assert len(outs) == len(want), k
        for got, w in zip(outs, want):
            check_close(got, w)
    assert runtime.device.live_buffer_count == 0


def test_masks_cpu_reference_matches_torch():
    """The pure-Python references of the same ops agree with torch too."""
    pte, [(ins, want)] = _load("masks")
    got = reference.run_program(open_program(pte), ins)
    for g, w in zip(got, want):
        check_close(g.numpy() if hasattr(g, "numpy") else g, w)


@pytest.mark.parametrize("name,calls,tol", [("masks", 1, 1e-5), ("kv_cache", 6, 1e-5),
                                            ("masks_fp16", 1, 2e-2)])
def test_page_check_agrees_natively(runtime, name, calls, tol):
    """tests/support/stepwise_check.py (what the browser test runs) passes natively too;
    masks_fp16 (force_fp16: float16 tensors, f16 kernels where the adapter has shader-f16)
    against torch's float32 within 2e-2."""
    from tests.support.stepwise_check import stepwise_report
    report = run_sync(stepwise_report(runtime, (HERE / f"{name}.pte").read_bytes(),
                                      (HERE / f"{name}.npz").read_bytes(), tol))
    assert report["calls"] == calls and report["first"] is None, report


@pytest.mark.parametrize("half", [False, True])
def test_to_dim_order_copy_int32_to_float(device, half):
    """int32 -> float32 (round to nearest even past 2**24, as torch) and -> float16."""
    from pte_webgpu.model import dtypes
    x = np.array([0, 1, -1, 7, 2**24 + 1, 2**24 + 3, -(2**31), 2**31 - 1, 65504, 65520, -3],
                 np.int32)
    out_dtype = dtypes.FLOAT16 if half else dtypes.FLOAT32
    g = G()
    out = g.op("dim_order_ops._to_dim_order_copy.default", g.input(x, dtype=dtypes.INT32),
               *[g.null() for _ in range(4)], g.bool(False), g.null(),
               g.tensor(x.shape, dtype=out_dtype))
    (got,) = g.run(device, out)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16 if half else np.float32)
    np.testing.assert_array_equal(np.asarray(got).astype(np.float32), want.astype(np.float32))
