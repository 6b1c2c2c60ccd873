"""RMSNorm folded into the 4-bit linear after it (runtime/fusion_norm.py,
ops/linear_q4_norm.py) natively (lavapipe here): the one-row forms (wide, keep) normalise
their row in a prologue, the others run the norm's own kernel first. Hand-built graphs
(one linear, one with Q4_1-style offsets, three stacked), every form forced, rows whose
float32 sum of squares overflows or whose mean is below FLT_MIN (the rare rows the norm
redoes scaled by a power of two), against float64 and the unfused build."""

import numpy as np
import pytest
from pte_webgpu.model.graph import Graph
from pte_webgpu.ops.linear_q4_choice import choose
from pte_webgpu.runtime import fusion
from pte_webgpu.runtime.storage import Storage

from tests.native.test_linear_q4_offsets import _offset_linear
from tests.native.test_linear_q4_residual import _linear
from tests.support.graph import G

NORM_Q4 = "pte_webgpu.norm_linear_q4gsw"
FORMS = ("dot", "gemv-64", "gemvsg-32", "tiled", "wide-8-2", "wide-32-1", "keep-32-8-8",
         "keep-128-8-4", "keep-8-16-4", None)


def _row(m: int, k: int, seed: int, rare: str = "") -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal((m, k)).astype(np.float32)
    if rare == "overflow":
        x *= np.float32(3e19)  # the f32 sum of squares overflows
    if rare == "subnormal":
        x *= np.float32(1e-21)  # squares below FLT_MIN: the mean underflows
    return x


def _graph(variant, x, widths, group, offsets, eps, fuse=True):
    m, k = x.shape
    g = G(options={"variants": {"linear_q4": variant}, "fuse": fuse} if variant
          else {"fuse": fuse})
    gamma = np.random.default_rng(k).uniform(0.5, 1.5, k).astype(np.float32)
    xi = g.input(x)
    normed = g.op("et_vk.rms_norm.default", xi, g.const(gamma), g.double(eps), g.tensor((m, k)))
    make = _offset_linear if offsets else _linear
    parts = [make(g, normed, m, k, n, group, 7 * i + k, not offsets)
             for i, n in enumerate(widths)]
    x64 = x.astype(np.float64)
    scale = np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps)
    y = (x64 / scale * gamma).astype(np.float32).astype(np.float64)  # the norm's f32 output
    want = [y @ w.T + (b if b is not None else 0) for _, w, b in parts]
    return g, [p[0] for p in parts], want


def _fused(g, outs):
    return [op.name for op in fusion.fuse(Graph(g.values, g.ops, g.inputs, outs, g.constants),
                                          Storage().nbytes, 1 << 27).ops]


def _close(got, want):
    for y, w in zip(got, want):
        np.testing.assert_allclose(y, w, rtol=1e-5, atol=3e-5 * np.abs(w).max())


@pytest.mark.parametrize("variant", FORMS)
@pytest.mark.parametrize("widths,offsets", [((40,), False), ((40,), True),
                                            ((64, 16, 24), False), ((48, 8, 8), True)])
@pytest.mark.parametrize("m,k", [(1, 64), (1, 576), (5, 96)])
def test_norm_q4_every_form(device, variant, widths, offsets, m, k):
    if variant and variant.startswith(("wide", "keep")) and m > 1:
        pytest.skip("the wide and keep forms take one row")
    g, outs, want = _graph(variant, _row(m, k, m + k), widths, 32, offsets, 1e-5)
    assert _fused(g, outs)[0] == NORM_Q4  # the norm, the linear(s) (and offset ops)
    _close(g.run(device, *outs), want)
    # the one-row forms take the prologue: one dispatch; the others the norm's own too
    form = variant or choose(device.info, m, sum(widths), k, group=32).name
    assert g.steps == (1 if form.startswith(("wide", "keep")) else 2)


@pytest.mark.parametrize("variant", ["wide-8-2", "keep-32-8-8", "keep-128-8-4", "dot"])
@pytest.mark.parametrize("rare", ["overflow", "subnormal"])
def test_rare_rows(device, variant, rare):
    """eps 0: a row whose float32 sum of squares overflows, or whose mean is subnormal,
    is normalised as et_vk.rms_norm does it (rescaled by a power of two), not to 0 or
    inf."""
    g, outs, want = _graph(variant, _row(1, 96, 3, rare), (24, 8), 32, False, 0.0)
    assert np.isfinite(want[0]).all()
    _close(g.run(device, *outs), want)


@pytest.mark.parametrize("variant", ["keep-32-8-8", "wide-8-2", None])
def test_fused_equals_unfused(device, variant):
    """With fusion off the norm and the linears run one by one: the same numbers."""
    x = _row(1, 576, 11)
    got = {}
    for fuse in (True, False):
        g, outs, want = _graph(variant, x, (64, 16, 16), 32, True, 1e-5, fuse)
        got[fuse] = g.run(device, *outs)
        _close(got[fuse], want)
    for a, b in zip(got[True], got[False]):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6 * np.abs(b).max())


def test_norm_with_another_reader_is_left_alone():
    g, outs, _ = _graph(None, _row(1, 64, 2), (16,), 32, False, 1e-5)
    normed = next(op.args[-1] for op in g.ops if op.name == "et_vk.rms_norm.default")
    extra = g.op("aten.neg.default", normed, g.tensor((1, 64)))
    assert NORM_Q4 not in _fused(g, outs + [extra])
