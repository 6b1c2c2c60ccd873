"""RMSNorm folded into the linear after it (runtime/fusion_norm.py, ops/norm_linear.py):
the matrix-vector forms normalise their rows in a prologue, the others run the norm's
own kernel first. Hand-built graphs, one linear and three stacked, every matmul form,
rows whose float32 sum of squares overflows or whose mean is below FLT_MIN (the rare
rows the norm redoes scaled by a power of two), against float64 and the unfused build."""

import numpy as np
import pytest
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import Graph
from pte_webgpu.ops import matmul_choice
from pte_webgpu.runtime import fusion
from pte_webgpu.runtime.storage import WIDE, Storage

from tests.support.graph import G


def _rows(rng, m: int, k: int, rare: bool, zero: bool = False) -> np.ndarray:
    x = rng.standard_normal((m, k)).astype(np.float32)
    if rare and m >= 3:
        x[0] *= np.float32(3e19)  # the f32 sum of squares overflows
        x[1] *= np.float32(1e-21)  # squares below FLT_MIN: the mean underflows
    if zero:
        x[2, :] = 0.0  # a zero row: x * rsqrt(eps) = 0
    return x


def _graph(x, gamma, weights, eps, dtype, storage, options):
    g = G(storage, options)
    m, k = x.shape
    xin = g.input(x.reshape(1, m, k), dtype)
    normed = g.op("et_vk.rms_norm.default", xin, g.const(gamma, dtype), g.double(eps),
                  g.tensor((1, m, k), dtype=dtype))
    outs = []
    for w in weights:
        view = g.op("aten.view_copy.default", normed, g.ints([m, k]),
                    g.tensor((m, k), dtype=dtype))
        outs.append(g.op("aten.linear.default", view, g.const(w, dtype), g.null(),
                         g.tensor((m, w.shape[0]), dtype=dtype)))
    return g, outs


def _expected(x, gamma, weights, eps):
    x64 = x.astype(np.float64)
    normed = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps) * gamma
    return [normed @ w.astype(np.float64).T for w in weights]


@pytest.mark.parametrize("variant", [None, "gemv4-32x1", "gemv4-4x4", "gemvsg4-32x2",
                                     "gemv4-64x4x4", "mm4-8x8", "dot"])
@pytest.mark.parametrize("m", [1, 3, 6])
@pytest.mark.parametrize("k", [64, 24, 30])
@pytest.mark.parametrize("stacked", [False, True])
def test_norm_linear_equals_float64(device, variant, m, k, stacked):
    if variant and matmul_choice.supported(matmul_choice.parse(variant), device.info):
        pytest.skip(matmul_choice.supported(matmul_choice.parse(variant), device.info))
    rng = np.random.default_rng(m * 100 + k + stacked)
    # eps 0: the row with a subnormal mean is a rare row; with eps 1e-5 (6 rows) eps
    # dominates it, and a zero row gives zeros
    eps = 0.0 if m == 3 else 1e-5
    x = _rows(rng, m, k, rare=True, zero=m == 6)
    gamma = rng.uniform(0.5, 1.5, k).astype(np.float32)
    weights = [rng.standard_normal((n, k)).astype(np.float32)
               for n in ((16, 8, 8) if stacked else (20,))]
    options = {"variants": {"matmul": variant}} if variant else {}
    got = {}
    for fuse in (True, False):
        g, outs = _graph(x, gamma, weights, eps, dtypes.FLOAT32, WIDE, options | {"fuse": fuse})
        got[fuse] = g.run(device, *outs)
    for a, b, want in zip(got[True], got[False], _expected(x, gamma, weights, eps)):
        a = np.asarray(a).reshape(want.shape)
        np.testing.assert_allclose(a, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())
        np.testing.assert_allclose(a, np.asarray(b).reshape(want.shape), rtol=2e-5,
                                   atol=2e-5 * np.abs(want).max())


@pytest.mark.parametrize("variant", [None, "gemvsg4-32x2", "mm4-8x8"])
def test_norm_linear_in_float16(device, variant):
    if "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")
    rng = np.random.default_rng(7)
    m, k = 3, 64
    x = _rows(rng, m, k, rare=False)
    gamma = rng.uniform(0.5, 1.5, k).astype(np.float32)
    weights = [rng.standard_normal((24, k)).astype(np.float32) * 0.2]
    options = {"variants": {"matmul": variant}} if variant else {}
    g, outs = _graph(x, gamma, weights, 1e-5, dtypes.FLOAT16, Storage(half=True), options)
    got = np.asarray(g.run(device, *outs)[0], np.float64).reshape(m, 24)
    x16, g16 = x.astype(np.float16), gamma.astype(np.float16)
    want = _expected(x16, g16, [w.astype(np.float16) for w in weights], 1e-5)[0]
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2 * np.abs(want).max())


def test_the_norm_folds_into_one_linear_or_a_stacked_three():
    rng = np.random.default_rng(1)
    x, gamma = _rows(rng, 2, 16, False), np.ones(16, np.float32)
    for weights, fired in (([np.ones((4, 16), np.float32)], "rms_norm + linear"),
                           ([np.ones((4, 16), np.float32)] * 3, "rms_norm + linear")):
        g, outs = _graph(x, gamma, weights, 1e-5, dtypes.FLOAT32, WIDE, {})
        graph = Graph(g.values, g.ops, g.inputs, outs, g.constants)
        fused = fusion.fuse(graph, WIDE.nbytes, 1 << 27)
        assert fused.meta["fused"][fired] == 1
        assert [op.name for op in fused.ops] == ["pte_webgpu.norm_linear"]


def test_a_norm_read_elsewhere_too_stays_a_dispatch():
    rng = np.random.default_rng(2)
    x, gamma = _rows(rng, 2, 16, False), np.ones(16, np.float32)
    g, outs = _graph(x, gamma, [np.ones((4, 16), np.float32)], 1e-5, dtypes.FLOAT32, WIDE, {})
    normed = next(op.args[-1] for op in g.ops if op.name == "et_vk.rms_norm.default")
    graph = Graph(g.values, g.ops, g.inputs, outs + [normed], g.constants)
    fused = fusion.fuse(graph, WIDE.nbytes, 1 << 27)
    assert "rms_norm + linear" not in fused.meta.get("fused", {})
