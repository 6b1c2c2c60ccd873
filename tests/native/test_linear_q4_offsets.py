"""4-bit linears with per-group offsets natively (lavapipe here): the graph ExecuTorch
exports for export/exact_q4.py's OffsetLinear (a GGUF's Q4_1 blocks: q4gsw(x) plus a float
linear of the input's group sums), built by hand, folded by runtime/fusion_q4.py into
``pte_webgpu.linear_q4gsw_offsets`` (and stacked when linears share the input), with
every form forced, against a float64 numpy reference of scale * q + offset."""

import numpy as np
import pytest
from pte_webgpu.model.graph import Graph
from pte_webgpu.runtime import fusion
from pte_webgpu.runtime.storage import Storage

from tests.support.graph import G, rand
from tests.support.q4_graphs import Q4GSW, dequantized, pack_q4gsw, quantize, scales_rows

UINT8 = __import__("pte_webgpu.model.dtypes", fromlist=["UINT8"]).UINT8
FORMS = ("dot", "gemv-64", "gemv-4", "gemvsg-8", "gemvsg-32", "tiled", None)
WIDE = ("wide-4-1", "wide-8-2", "wide-32-3", "keep-8-16-4", "keep-32-8-8", "keep-128-8-4")


def _offset_linear(g, xi, m, k, n, group, seed, bias):
    """One exported OffsetLinear on input ``xi`` [m, k]: (output id, float64 reference
    weight [n, k], bias)."""
    w, s = quantize(n, k, group, seed=seed)
    offsets = np.random.default_rng(seed + 99).uniform(-0.3, 0.3, (n, k // group)).astype(np.float32)
    b = rand(n) if bias else None
    q = g.tensor((m, n))
    g.op(Q4GSW, xi, g.const(pack_q4gsw(w), UINT8), g.const(scales_rows(s)), g.int(group),
         g.null() if b is None else g.const(b), q)
    grouped = g.op("aten.view_copy.default", xi, g.ints([m, k // group, group]),
                   g.tensor((m, k // group, group)))
    sums = g.op("aten.sum.dim_IntList", grouped, g.ints([-1]), g.bool(False), g.null(),
                g.tensor((m, k // group)))
    term = g.op("aten.linear.default", sums, g.const(offsets), g.null(), g.tensor((m, n)))
    out = g.op("aten.add.Tensor", q, term, g.int(1), g.tensor((m, n)))
    weight = dequantized(w, s) + np.repeat(offsets.astype(np.float64), group, axis=1)
    return out, weight, b


def _check(variant, m, k, group, widths, bias=True, seed=0):
    x = rand(m, k)
    g = G(options={"variants": {"linear_q4": variant}} if variant else None)
    xi = g.input(x)
    parts = [_offset_linear(g, xi, m, k, n, group, seed + i, bias) for i, n in enumerate(widths)]
    outs = [p[0] for p in parts]
    rewritten = fusion.fuse(Graph(g.values, g.ops, g.inputs, outs, g.constants),
                            Storage().nbytes, 1 << 27)
    want_op = "pte_webgpu.linear_q4gsw_offsets" if len(widths) == 1 \
        else "pte_webgpu.fused_linear_q4gsw"
    assert [op.name for op in rewritten.ops] == [want_op]  # the 4 extra ops per linear gone
    return g, x, outs, parts


@pytest.mark.parametrize("m,k,group", [(1, 64, 32), (37, 64, 32), (3, 48, 16), (5, 36, 4)])
@pytest.mark.parametrize("variant", FORMS)
@pytest.mark.parametrize("widths", [(20,), (20, 12, 8)])
def test_offsets_every_form(device, m, k, group, variant, widths):
    g, x, outs, parts = _check(variant, m, k, group, widths, seed=m + k)
    for y, (_, weight, b) in zip(g.run(device, *outs), parts):
        want = x.astype(np.float64) @ weight.T + b
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())


@pytest.mark.parametrize("variant", WIDE)
@pytest.mark.parametrize("k,group,widths", [(64, 32, (20,)), (128, 16, (33, 7)),
                                            (256, 64, (9, 12, 40)), (576, 32, (24, 8, 8))])
def test_offsets_wide_forms(device, variant, k, group, widths):
    g, x, outs, parts = _check(variant, 1, k, group, widths, bias=False, seed=k)
    for y, (_, weight, _) in zip(g.run(device, *outs), parts):
        want = x.astype(np.float64) @ weight.T
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())


def test_offsets_unfused_equal_fused(device):
    """With fusion off the exported ops run one by one (sum, float linear, add) and give
    the same numbers."""
    m, k, group = 4, 64, 32
    x = rand(m, k)
    for fuse in (True, False):
        g = G(options={"fuse": fuse})
        xi = g.input(x)
        out, weight, b = _offset_linear(g, xi, m, k, 24, group, 3, True)
        (y,) = g.run(device, out)
        want = x.astype(np.float64) @ weight.T + b
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())


def test_pattern_with_another_reader_is_left_alone():
    """The group sums also read elsewhere: folding would drop them, so nothing folds."""
    m, k, group = 1, 64, 32
    g = G()
    xi = g.input(rand(m, k))
    out, _, _ = _offset_linear(g, xi, m, k, 16, group, 1, False)
    sums = next(op.args[-1] for op in g.ops if op.name == "aten.sum.dim_IntList")
    extra = g.op("aten.add.Tensor", sums, sums, g.int(1), g.tensor((m, k // group)))
    rewritten = fusion.fuse(Graph(g.values, g.ops, g.inputs, [out, extra], g.constants),
                            Storage().nbytes, 1 << 27)
    assert "pte_webgpu.linear_q4gsw_offsets" not in [op.name for op in rewritten.ops]
