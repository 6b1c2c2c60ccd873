"""A 4-bit linear's residual add folded into its epilogue natively (lavapipe here):
``add.Tensor(residual, q4 linear)``, with and without Q4_1-style offsets, built by hand,
becomes ``pte_webgpu.linear_q4gsw_residual`` (runtime/fusion_q4.py), every form forced,
against a float64 numpy reference; an add that is not the linear's only reader, or whose
alpha is not 1, is left alone."""

import numpy as np
import pytest
from pte_webgpu.model.graph import Graph
from pte_webgpu.runtime import fusion
from pte_webgpu.runtime.storage import Storage

from tests.native.test_linear_q4_offsets import _offset_linear
from tests.support.graph import G, rand
from tests.support.q4_graphs import Q4GSW, dequantized, pack_q4gsw, quantize, scales_rows

UINT8 = __import__("pte_webgpu.model.dtypes", fromlist=["UINT8"]).UINT8
RESIDUAL = "pte_webgpu.linear_q4gsw_residual"
FORMS = ("dot", "gemv-64", "gemvsg-8", "gemvsg-32", "tiled", "wide-8-2", "keep-32-8-8",
         "keep-128-8-4", None)


def _linear(g, xi, m, k, n, group, seed, bias):
    w, s = quantize(n, k, group, seed=seed)
    b = rand(n) if bias else None
    q = g.tensor((m, n))
    g.op(Q4GSW, xi, g.const(pack_q4gsw(w), UINT8), g.const(scales_rows(s)), g.int(group),
         g.null() if b is None else g.const(b), q)
    return q, dequantized(w, s), b


def _graph(variant, m, k, n, group, offsets, bias, alpha=1):
    x, r = rand(m, k), rand(m, n)
    g = G(options={"variants": {"linear_q4": variant}} if variant else None)
    xi, ri = g.input(x), g.input(r)
    make = _offset_linear if offsets else _linear
    lin, weight, b = make(g, xi, m, k, n, group, m + k, bias)
    out = g.op("aten.add.Tensor", ri, lin, g.int(alpha), g.tensor((m, n)))
    want = r.astype(np.float64) + alpha * (x.astype(np.float64) @ weight.T + (
        b if b is not None else 0))
    return g, out, want


def _fused(g, outs):
    return [op.name for op in fusion.fuse(Graph(g.values, g.ops, g.inputs, outs, g.constants),
                                          Storage().nbytes, 1 << 27).ops]


@pytest.mark.parametrize("m,k,group", [(1, 64, 32), (1, 576, 32), (6, 96, 16), (37, 64, 32)])
@pytest.mark.parametrize("variant", FORMS)
@pytest.mark.parametrize("offsets", [False, True])
def test_residual_every_form(device, m, k, group, variant, offsets):
    if variant and variant.startswith(("wide", "keep")) and m > 1:
        pytest.skip("the wide and keep forms take one row")
    g, out, want = _graph(variant, m, k, 40, group, offsets, bias=not offsets)
    assert _fused(g, [out]) == [RESIDUAL]  # the linear (and its offset ops) and the add
    (y,) = g.run(device, out)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())


def test_fused_equals_unfused(device):
    """With fusion off the linear, its offset ops and the add run one by one: the same
    numbers on the same inputs."""
    g, out, want = _graph(None, 3, 64, 24, 32, True, True)
    got = {}
    for fuse in (True, False):
        g.options = {"fuse": fuse}
        (got[fuse],) = g.run(device, out)
        np.testing.assert_allclose(got[fuse], want, rtol=1e-5, atol=2e-5 * np.abs(want).max())
    np.testing.assert_allclose(got[True], got[False], rtol=1e-6, atol=1e-6 * np.abs(want).max())


def test_alpha_or_another_reader_is_left_alone():
    g, out, _ = _graph(None, 1, 64, 16, 32, False, False, alpha=2)
    assert RESIDUAL not in _fused(g, [out])
    g, out, _ = _graph(None, 1, 64, 16, 32, False, False)
    lin = next(op.args[-1] for op in g.ops if op.name == Q4GSW)
    extra = g.op("aten.neg.default", lin, g.tensor((1, 16)))
    assert RESIDUAL not in _fused(g, [out, extra])
