"""The cols form of the 4-bit linears natively (lavapipe here: its subgroups are reported
as 4 to 128 lanes, so the 4-lane input broadcast SwiftShader runs, and the 8-lane one
forced on its subgroups of 8): forced at every column count, against a float64 numpy
reference, on odd shapes (K not a multiple of 32: its word-by-word tail; N not a multiple
of 8 nor of the columns per invocation; groups of 8, 16, 32, 64; 1 to 8 rows), with
Q4_1-style offsets, stacked linears, a residual add and float16 activations; refused where
a group is not whole words (the rule: tests/unit/test_linear_q4_select.py)."""

import numpy as np
import pytest
from pte_webgpu.errors import UnsupportedError
from pte_webgpu.model import dtypes
from pte_webgpu.runtime.storage import Storage

from tests.native.test_linear_q4_offsets import _check
from tests.native.test_linear_q4_residual import RESIDUAL, _fused, _graph
from tests.support.graph import G, rand
from tests.support.q4_graphs import Q4GSW, pack_q4gsw, q4gsw_graph, quantize, reference, scales_rows

COLS = ("cols-1", "cols-2", "cols-4", "cols-8", "cols-16", "cols-32", "cols-4-32", "cols-16-8")
# (M, N, K, group, bias): K % 32 of 8, 16, 24 and 0; N below, between and past the columns
SHAPES = [(1, 20, 48, 16, True), (3, 33, 40, 8, False), (1, 7, 32, 32, True),
          (8, 50, 96, 32, True), (2, 96, 88, 8, False), (1, 129, 256, 64, True),
          (5, 10, 1152, 32, False)]


def _tol(want, half=False):
    t = 2e-3 if half else 1e-5
    return dict(rtol=t, atol=2 * t * np.abs(want).max())


@pytest.mark.parametrize("m,n,k,group,bias", SHAPES)
@pytest.mark.parametrize("variant", COLS)
def test_cols_forms(device, m, n, k, group, bias, variant):
    w, s = quantize(n, k, group, seed=m + n + k)
    x = rand(m, k)
    b = rand(n) if bias else None
    g, out = q4gsw_graph(x, w, s, group, b, options={"variants": {"linear_q4": variant}})
    (y,) = g.run(device, out)
    want = reference(x, w, s, b)
    np.testing.assert_allclose(y, want, **_tol(want))


def test_cols_eight_lane_broadcast(device, monkeypatch):
    """The broadcast from 8 lanes (adapters whose subgroups all have 8 or more)."""
    from pte_webgpu.ops import linear_q4
    monkeypatch.setattr(linear_q4, "cols_share", lambda traits: 8)
    for m, n, k, group, bias in SHAPES[:4]:
        test_cols_forms(device, m, n, k, group, bias, "cols-8")


@pytest.mark.parametrize("m,k,group", [(1, 64, 32), (3, 48, 16), (2, 72, 8)])
@pytest.mark.parametrize("variant", ["cols-8", "cols-4"])
@pytest.mark.parametrize("widths", [(20,), (20, 12, 8)])
def test_cols_offsets_and_stacked(device, m, k, group, variant, widths):
    g, x, outs, parts = _check(variant, m, k, group, widths, seed=m + k)
    for y, (_, weight, b) in zip(g.run(device, *outs), parts):
        want = x.astype(np.float64) @ weight.T + b
        np.testing.assert_allclose(y, want, **_tol(want))


@pytest.mark.parametrize("m,k,group", [(1, 576, 32), (6, 96, 16), (4, 40, 8)])
@pytest.mark.parametrize("offsets", [False, True])
def test_cols_residual(device, m, k, group, offsets):
    g, out, want = _graph("cols-8", m, k, 40, group, offsets, bias=not offsets)
    assert _fused(g, [out]) == [RESIDUAL]
    (y,) = g.run(device, out)
    np.testing.assert_allclose(y, want, **_tol(want))


def test_cols_float16(device):
    m, n, k, group = 2, 36, 80, 16
    w, s = quantize(n, k, group, seed=5)
    s = s.astype(np.float16).astype(np.float32)
    x = rand(m, k).astype(np.float16).astype(np.float32)
    g = G(storage=Storage(half=True), options={"variants": {"linear_q4": "cols-8"}})
    out = g.tensor((m, n), dtype=dtypes.FLOAT16)
    g.op(Q4GSW, g.input(x, dtypes.FLOAT16), g.const(pack_q4gsw(w), dtypes.UINT8),
         g.const(scales_rows(s), dtypes.FLOAT16), g.int(group), g.null(), out)
    (y,) = g.run(device, out)
    want = reference(x, w, s, None)
    np.testing.assert_allclose(y, want, **_tol(want, half=True))


def test_cols_refuses_groups_within_a_word(device):
    w, s = quantize(10, 36, 4)
    g, out = q4gsw_graph(rand(1, 36), w, s, 4, None, options={"variants": {"linear_q4": "cols-8"}})
    with pytest.raises(UnsupportedError, match="multiple of 8"):
        g.run(device, out)
