"""Reductions that stay finite where the float32 sum of squares does not: rms_norm rows
near 1e-20 (squares subnormal: flushed to 0 by adapters that flush denormals, such as
SwiftShader) and near 1e19 (the sum overflows), with eps 0, in real exported programs
(tests/fixtures/edge/rmsnorm_eps0_rows*), match a float64 reference, under every rms_norm
variant. The rare rows take a rescaled pass (by the largest |x|, as careful BLAS norms
do); rows with NaN or inf keep torch's answer."""

import numpy as np
import pte_webgpu
import pytest

from tests.support.fixture_index import FIXTURES
from tests.support.gpu_thread import run_sync
from tests.support.rms_norm_variants import VARIANTS

EPS0 = ["rmsnorm_eps0_rows1e-20_4x64", "rmsnorm_eps0_rows1e19_4x64",
        "rmsnorm_eps0_rows1e-25_4x64", "rmsnorm_eps0_rows3e19_4x64"]


def float64_rms_norm(x, w, eps=0.0):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w.astype(np.float64)


def _run(name, variant):
    async def go():
        options = {"variants": {"rms_norm": variant}} if variant else {}
        rt = await pte_webgpu.Runtime.create("native", options=options)
        try:
            program = await rt.load_program((FIXTURES / "edge" / f"{name}.pte").read_bytes())
            ref = np.load(FIXTURES / "edge" / f"{name}.npz")
            (got,) = await program.load_method().execute([ref["in0"]])
            program.close()
            return got, ref
        finally:
            rt.close()
    return run_sync(go())


@pytest.mark.parametrize("variant", [None] + VARIANTS)
@pytest.mark.parametrize("name", EPS0)
def test_rms_norm_rows_near_underflow_and_overflow_match_float64(name, variant):
    got, ref = _run(name, variant)
    want = float64_rms_norm(ref["in0"], ref["weight"])
    assert np.isfinite(got).all(), f"{name} {variant}: {got[~np.isfinite(got)][:4]}"
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


LN_EPS0 = ["layernorm_eps0_rows1e-20_4x64", "layernorm_eps0_rows1e19_4x64"]


def float64_layer_norm(x, w, b):
    x = x.astype(np.float64)
    d = x - x.mean(-1, keepdims=True)
    return d / np.sqrt((d * d).mean(-1, keepdims=True)) * w + b


@pytest.mark.parametrize("name", LN_EPS0)
def test_layer_norm_rows_near_underflow_and_overflow_match_float64(name):
    """The same for native_layer_norm (eps 0): the variance's float32 sum is subnormal
    (flushed by some adapters) or overflows; a rescaled pass keeps the row finite."""
    got, ref = _run(name, None)
    want = float64_layer_norm(ref["in0"], ref["weight"], ref["bias"])
    assert np.isfinite(got).all(), f"{name}: {got[~np.isfinite(got)][:4]}"
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", [None, "tree4-256-split", "row4-16-split", "tile-2x64-split",
                                     "tree4-256-inline"])
def test_rare_rows_then_plain_rows_then_rare_rows_on_one_method(variant):
    """The split form leaves per-row flags for its second dispatch: they must be clear
    again after each run (a stale flag would redo a plain row; a missed one leaves inf)."""
    name = "rmsnorm_eps0_rows1e19_4x64"
    ref = np.load(FIXTURES / "edge" / f"{name}.npz")
    rare = ref["in0"]
    plain = np.random.default_rng(5).uniform(-2, 2, rare.shape).astype(np.float32)
    tiny = (plain * np.float32(1e-20)).astype(np.float32)

    async def go():
        options = {"variants": {"rms_norm": variant}} if variant else {}
        rt = await pte_webgpu.Runtime.create("native", options=options)
        try:
            program = await rt.load_program((FIXTURES / "edge" / f"{name}.pte").read_bytes())
            method = program.load_method()
            outs = [(await method.execute([x]))[0] for x in (rare, plain, tiny, rare, plain)]
            program.close()
            return outs
        finally:
            rt.close()

    for x, got in zip((rare, plain, tiny, rare, plain), run_sync(go())):
        assert np.isfinite(got).all(), f"{variant}: {got[~np.isfinite(got)][:4]}"
        np.testing.assert_allclose(got, float64_rms_norm(x, ref["weight"]), rtol=1e-5, atol=1e-6)
