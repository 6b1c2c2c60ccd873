"""aten.native_layer_norm natively (wgpu on lavapipe), f32 and f16: hand-built graphs
whose output is a ValueList [out, mean, rstd], against numpy in float64."""

from __future__ import annotations

import numpy as np
import pytest
from pte_webgpu.errors import FormatError
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ListValue
from pte_webgpu.runtime.build import _outputs_aliasing_inputs
from pte_webgpu.runtime.storage import Storage

from tests.support.graph import G, Limited

F16 = dtypes.FLOAT16
HALF = Storage(half=True)
RNG = np.random.default_rng(5)
NAME = "aten.native_layer_norm.default"


def want_ln(x, k, w, b, eps):
    """float64 layer norm over the last ``k`` dims: (out, mean, rstd)."""
    x = x.astype(np.float64)
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    rstd = 1.0 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    out = (x - mean) * rstd
    if w is not None:
        out = out * w.astype(np.float64)
    if b is not None:
        out = out + b.astype(np.float64)
    return out, mean, rstd


def build_ln(g, x, k, w, b, eps, dtype=dtypes.FLOAT32, eps_value=None):
    """A graph of one native_layer_norm; returns the ids of out, mean and rstd."""
    stat_shape = x.shape[:x.ndim - k] + (1,) * k
    xi = g.input(x, dtype)
    wi = g.const(w, dtype) if w is not None else g.null()
    bi = g.const(b, dtype) if b is not None else g.null()
    ei = eps_value if eps_value is not None else g.double(eps)
    ids = (g.tensor(x.shape, dtype=dtype), g.tensor(stat_shape, dtype=dtype),
           g.tensor(stat_shape, dtype=dtype))
    out_list = g._add(ListValue("value_list", ids))
    g.op(NAME, xi, g.ints(x.shape[x.ndim - k:]), wi, bi, ei, out_list)
    return ids


def run_ln(device, x, k=1, w=None, b=None, eps=1e-5, storage=None, dtype=dtypes.FLOAT32):
    g = G(storage) if storage else G()
    ids = build_ln(g, x, k, w, b, eps, dtype)
    return g.run(device, *ids), want_ln(x, k, w, b, eps)


def check(got, want, tol):
    for gv, wv, what in zip(got, want, ("out", "mean", "rstd")):
        assert gv.shape == wv.shape, (what, gv.shape, wv.shape)
        np.testing.assert_allclose(gv.astype(np.float64), wv, rtol=tol, atol=tol, err_msg=what)


def rand(*shape, scale=1.0, shift=0.0):
    return (RNG.standard_normal(shape) * scale + shift).astype(np.float32)


@pytest.mark.parametrize("width", [1, 7, 130, 4096])
@pytest.mark.parametrize("affine", ["none", "weight", "bias", "both"])
def test_widths_and_affine(device, width, affine):
    x = rand(3, width, scale=2.0, shift=0.5)
    w = rand(width, scale=0.3, shift=1.0) if affine in ("weight", "both") else None
    b = rand(width) if affine in ("bias", "both") else None
    got, want = run_ln(device, x, 1, w, b)
    check(got, want, 2e-5)


@pytest.mark.parametrize("eps", [1e-5, 1e-3, 0.5])
def test_eps_from_the_graph(device, eps):
    x = rand(4, 33, scale=0.05)  # variance ~2.5e-3: eps matters
    got, want = run_ln(device, x, 1, rand(33), rand(33), eps)
    check(got, want, 2e-5)


def test_int_eps(device):
    x = rand(2, 9)
    g = G()
    ids = build_ln(g, x, 1, None, None, 1, eps_value=g.int(1))
    check(g.run(device, *ids), want_ln(x, 1, None, None, 1.0), 2e-5)


def test_several_trailing_dims(device):
    x = rand(2, 3, 4, 5, shift=-1.0)
    got, want = run_ln(device, x, 3, rand(3, 4, 5), rand(3, 4, 5))
    check(got, want, 2e-5)
    got, want = run_ln(device, x, 2, rand(4, 5), None)
    check(got, want, 2e-5)


def test_constant_rows(device):
    x = np.stack([np.full(130, 3.25, np.float32), np.zeros(130, np.float32),
                  np.full(130, -1e4, np.float32)])
    w, b = rand(130), rand(130)
    got, want = run_ln(device, x, 1, w, b, 1e-5)
    check(got, want, 1e-5)
    np.testing.assert_allclose(got[0], np.broadcast_to(b, x.shape), atol=1e-6)  # var 0: y = b


@pytest.mark.parametrize("width", [7, 130, 4096])
def test_large_offset_is_stable(device, width):
    # 1e4 + N(0, 0.1): E[x^2] - E[x]^2 in f32 loses everything (x^2 ~ 1e8, ulp 8)
    x = rand(4, width, scale=0.1, shift=1e4)
    got, want = run_ln(device, x, 1, None, None, 1e-5)
    check(got, want, 1e-3)
    assert np.abs(got[0] - want[0]).max() < 1e-3


def test_folded_grid_and_small_workgroups(device):
    small = Limited(device, maxComputeInvocationsPerWorkgroup=16,
                    maxComputeWorkgroupsPerDimension=4)
    x = rand(13, 100, shift=2.0)  # 13 rows on a folded grid of 4 x 4
    got, want = run_ln(small, x, 1, rand(100), rand(100))
    check(got, want, 2e-5)


def test_rejects_a_normalized_shape_that_is_not_trailing(device):
    g = G()
    x = rand(3, 4)
    ids = tuple(g.tensor(s) for s in ((3, 4), (3, 1), (3, 1)))
    g.op(NAME, g.input(x), g.ints([3]), g.null(), g.null(), g.double(1e-5),
         g._add(ListValue("value_list", ids)))
    with pytest.raises(FormatError, match="trailing shape"):
        g.run(device, *ids)


def test_results_sharing_memory_get_their_own_buffers():
    g = G()
    x = g.tensor((2, 8), mem_obj=0)
    ids = (g.tensor((2, 8), mem_obj=1), g.tensor((2, 1), mem_obj=0),
           g.tensor((2, 1), mem_obj=1))
    g.op(NAME, x, g.ints([8]), g.null(), g.null(), g.double(1e-5),
         g._add(ListValue("value_list", ids)))
    from pte_webgpu.model.graph import Graph
    graph = Graph(g.values, g.ops, [x], [ids[0]], [])
    # mean shares the input's memory object, rstd the output's: both dedicated
    assert _outputs_aliasing_inputs(graph) == {ids[1], ids[2]}


def test_pooled_results_in_a_real_chain(device):
    """The exporter's planning: out, mean and rstd pooled, the next op reads out."""
    x = rand(4, 32, shift=1.0)
    g = G()
    xi = g.input(x)
    ids = (g.tensor((4, 32), mem_obj=0), g.tensor((4, 1), mem_obj=1),
           g.tensor((4, 1), mem_obj=2))
    g.op(NAME, xi, g.ints([32]), g.null(), g.null(), g.double(1e-5),
         g._add(ListValue("value_list", ids)))
    y = g.op("aten.add.Tensor", ids[0], xi, g.int(1), g.tensor((4, 32), mem_obj=1))
    (got,) = g.run(device, y)
    out, _, _ = want_ln(x, 1, None, None, 1e-5)
    np.testing.assert_allclose(got, out + x, atol=2e-5, rtol=2e-5)


# --- f16 --------------------------------------------------------------------------------
@pytest.fixture
def shader_f16(device):
    if "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")


@pytest.mark.parametrize("width", [1, 7, 130, 4096])
@pytest.mark.parametrize("affine", [False, True])
def test_f16(device, shader_f16, width, affine):
    x = (RNG.standard_normal((3, width)) * 2 + 0.5).astype(np.float16)
    w = (RNG.standard_normal(width) * 0.3 + 1).astype(np.float16) if affine else None
    b = RNG.standard_normal(width).astype(np.float16) if affine else None
    got, want = run_ln(device, x, 1, w, b, 1e-5, HALF, F16)
    for gv, wv in zip(got, want):
        want16 = wv.astype(np.float16).astype(np.float64)
        np.testing.assert_allclose(gv.astype(np.float64), want16, atol=4e-3, rtol=4e-3)


def test_f16_large_offset_and_constant_rows(device, shader_f16):
    # 1000 + small steps (f16 ulp at 1000 is 0.5), and a constant row
    x = np.stack([np.float16(1000) + np.arange(64).astype(np.float16) % 5 * np.float16(0.5),
                  np.full(64, 7, np.float16)])
    got, want = run_ln(device, x, 1, None, None, 1e-5, HALF, F16)
    for gv, wv in zip(got, want):
        want16 = wv.astype(np.float16).astype(np.float64)
        np.testing.assert_allclose(gv.astype(np.float64), want16, atol=4e-3, rtol=4e-3)
