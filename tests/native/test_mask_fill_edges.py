"""The mask and fill ops (eq, where, full, arange, le, logical_and/not, ...) on hand-built
graphs at torch's edges (NaN, +-inf, -0, 0-dim operands), in f32 storage and, where the
adapter has shader-f16, with float16 tensors kept as f16 (their f16 kernels). References:
numpy with torch's semantics."""

from __future__ import annotations

import numpy as np
import pytest
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ListValue
from pte_webgpu.runtime.storage import Storage

from tests.support.graph import G

EDGE = np.array([np.nan, -np.inf, np.inf, -0.0, 0.0, 1.0, -1.0, 3.5, -2.25, 65504.0],
                np.float32)
INT = dtypes.INT32
BOOL = dtypes.BOOL


def _graph(device, half):
    if half and "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")
    return (G(Storage(half=True)), dtypes.FLOAT16) if half else (G(), dtypes.FLOAT32)


def same(got, want):
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (got, want)
    ok = ~np.isnan(want)
    np.testing.assert_array_equal(got[ok], want[ok])
    np.testing.assert_array_equal(np.signbit(got[ok]), np.signbit(want[ok]))


@pytest.mark.parametrize("half", [False, True])
@pytest.mark.parametrize("other", [float("nan"), float("-inf"), 0.0, -0.0, 3.5])
def test_eq_scalar_and_where(device, half, other):
    """eq(x, other) -> bool (NaN equals nothing; -0 == 0), then where(mask, x, 0-dim -inf)."""
    g, ft = _graph(device, half)
    x = g.input(EDGE, dtype=ft)
    mask = g.op("aten.eq.Scalar", x, g.double(other), g.tensor(EDGE.shape, dtype=BOOL))
    fill = g.op("aten.full.default", g.ints([]), g.double(-np.inf), g.null(), g.null(),
                g.null(), g.null(), g.tensor((), dtype=ft))
    picked = g.op("aten.where.self", mask, x, fill, g.tensor(EDGE.shape, dtype=ft))
    got_mask, got = g.run(device, mask, picked)
    want_mask = EDGE == np.float32(other)
    same(got_mask, want_mask.astype(np.float32))
    same(got, np.where(want_mask, EDGE, -np.inf))


@pytest.mark.parametrize("half", [False, True])
def test_causal_chain_in_ints(device, half):
    """arange (int32), integer sub with broadcasting, le.Scalar, full(True), logical_and,
    logical_not, where with two 0-dim operands, full_like(-inf)."""
    g, ft = _graph(device, half)
    n = 5
    i = g.op("aten.arange.start_step", g.int(0), g.int(n), g.int(1), *[g.null()] * 4,
             g.tensor((n,), dtype=INT))
    col = g.op("aten.view_copy.default", i, g.ints([n, 1]), g.tensor((n, 1), dtype=INT))
    rel = g.op("aten.sub.Tensor", col, i, g.int(1), g.tensor((n, n), dtype=INT))
    le = g.op("aten.le.Scalar", rel, g.int(0), g.tensor((n, n), dtype=BOOL))
    full = g.op("aten.full.default", g.ints([n, n]), g.bool(True), *[g.null()] * 4,
                g.tensor((n, n), dtype=BOOL))
    both = g.op("aten.logical_and.default", full, le, g.tensor((n, n), dtype=BOOL))
    off = g.op("aten.logical_not.default", both, g.tensor((n, n), dtype=BOOL))
    zero = g.op("aten.full.default", g.ints([]), g.double(-0.0), *[g.null()] * 4,
                g.tensor((), dtype=ft))
    ninf = g.op("aten.full_like.default", zero, g.double(-np.inf), *[g.null()] * 5,
                g.tensor((), dtype=ft))
    bias = g.op("aten.where.self", off, ninf, zero, g.tensor((n, n), dtype=ft))
    down = g.op("aten.arange.start_step", g.int(n), g.int(-n), g.int(-3), *[g.null()] * 4,
                g.tensor((4,), dtype=INT))
    got_rel, got_bias, got_down = g.run(device, rel, bias, down)
    r = np.arange(n)[:, None] - np.arange(n)[None, :]
    same(got_rel, r)
    same(got_bias, np.where(r <= 0, -0.0, -np.inf))
    same(got_down, np.arange(n, -n, -3))


@pytest.mark.parametrize("half", [False, True])
def test_bmm_cat_expand(device, half):
    """bmm (f32 accumulation), cat along a middle dim and the last, expand_copy to 4-D."""
    g, ft = _graph(device, half)
    rng = np.random.default_rng(88)
    a = rng.standard_normal((3, 4, 5)).astype(np.float32)
    b = rng.standard_normal((3, 5, 2)).astype(np.float32)
    if half:
        a, b = a.astype(np.float16).astype(np.float32), b.astype(np.float16).astype(np.float32)
    ai, bi = g.input(a, dtype=ft), g.input(b, dtype=ft)
    prod_ = g.op("aten.bmm.default", ai, bi, g.tensor((3, 4, 2), dtype=ft))
    items = g._add(ListValue("value_list", (ai, ai)))
    cat1 = g.op("aten.cat.default", items, g.int(1), g.tensor((3, 8, 5), dtype=ft))
    items2 = g._add(ListValue("value_list", (prod_, ai, prod_)))
    cat2 = g.op("aten.cat.default", items2, g.int(-1), g.tensor((3, 4, 9), dtype=ft))
    exp = g.op("aten.expand_copy.default", bi, g.ints([2, -1, 5, -1]), g.bool(False),
               g.tensor((2, 3, 5, 2), dtype=ft))
    got_p, got_c1, got_c2, got_e = g.run(device, prod_, cat1, cat2, exp)
    want = np.matmul(a.astype(np.float64), b.astype(np.float64))
    tol = 2e-3 if half else 1e-5
    np.testing.assert_allclose(got_p, want, rtol=tol, atol=tol)
    same(got_c1, np.concatenate([a, a], 1))
    np.testing.assert_allclose(got_c2, np.concatenate([want, a, want], -1), rtol=tol, atol=tol)
    same(got_e, np.broadcast_to(b, (2, 3, 5, 2)))


@pytest.mark.parametrize("scalar", ["int", "double", "bool"])
def test_compare_int_and_bool_tensors(device, scalar):
    """le/eq on int32 tensors with Int and Double scalars, eq on bool with a Bool."""
    g = G()
    x = np.array([-3, -1, 0, 1, 2, 2**24 + 1], np.int32)
    xi = g.input(x, dtype=INT)
    if scalar == "bool":
        mask = g.op("aten.logical_not.default", xi, g.tensor(x.shape, dtype=BOOL))
        out = g.op("aten.eq.Scalar", mask, g.bool(True), g.tensor(x.shape, dtype=BOOL))
        (got,) = g.run(device, out)
        same(got, (x == 0).astype(np.float32))
        return
    other = g.int(1) if scalar == "int" else g.double(0.5)
    le = g.op("aten.le.Scalar", xi, other, g.tensor(x.shape, dtype=BOOL))
    eq = g.op("aten.eq.Scalar", xi, other, g.tensor(x.shape, dtype=BOOL))
    got_le, got_eq = g.run(device, le, eq)
    v = 1 if scalar == "int" else 0.5
    same(got_le, (x <= v).astype(np.float32))
    same(got_eq, (x == v).astype(np.float32))


def test_where_needs_a_bool_condition(device):
    """A typed error naming the op and its operand types, at load."""
    from pte_webgpu.errors import UnsupportedError
    g = G()
    c = g.input(np.array([0, 1], np.int32), dtype=INT)
    x = g.input(np.array([1.0, 2.0], np.float32))
    out = g.op("aten.where.self", c, x, x, g.tensor((2,)))
    with pytest.raises(UnsupportedError, match=r"aten\.where\.self.*'int'"):
        g.run(device, out)


@pytest.mark.parametrize("half", [False, True])
def test_index_put_and_copy(device, half):
    """index_put after two Nones with a 2-D index (one negative), values broadcast over a
    dim, then copy_ of the result into another tensor: cache[:, :, idx] = v."""
    g, ft = _graph(device, half)
    rng = np.random.default_rng(9)
    cache = rng.standard_normal((2, 3, 6, 4)).astype(np.float32)
    vals = rng.standard_normal((2, 1, 2, 2, 4)).astype(np.float32)
    if half:
        cache, vals = (a.astype(np.float16).astype(np.float32) for a in (cache, vals))
    idx = np.array([[0, -1], [3, 2]], np.int32)
    ci, vi, ii = g.input(cache, dtype=ft), g.input(vals, dtype=ft), g.input(idx, dtype=INT)
    items = g._add(ListValue("value_list", (g.null(), g.null(), ii)))
    put = g.op("aten.index_put.default", ci, items, vi, g.bool(False),
               g.tensor(cache.shape, dtype=ft))
    dst = g.op("aten.full.default", g.ints(list(cache.shape)), g.double(7.0), *[g.null()] * 4,
               g.tensor(cache.shape, dtype=ft))
    g.op("aten.copy_.default", dst, put, g.bool(False), dst)
    (got,) = g.run(device, dst)
    want = cache.copy()
    want[:, :, idx] = np.broadcast_to(vals, (2, 3, 2, 2, 4))
    same(got, want)
