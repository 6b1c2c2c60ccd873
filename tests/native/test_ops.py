"""Op kernels on odd shapes, natively (wgpu on lavapipe): small graphs built by hand,
run through runtime.build.build_delegate and compared with numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from pte_webgpu.errors import FormatError, InputError, UnsupportedError
from pte_webgpu.model import dtypes

from tests.support.activations import ACTIVATIONS, EDGES, activation_want, check_activation, gelu_tanh
from tests.support.graph import RNG, G, Limited, rand

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")


def close(got, want, tol=1e-5):
    assert got.shape == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                               atol=tol, rtol=tol)


# --- matmul ----------------------------------------------------------------------------
def _linear(device, x, w, b, variant=None):
    g = G(options={"variants": {"matmul": variant}} if variant else None)
    xi, wi = g.input(x), g.const(w)
    bi = g.const(b) if b is not None else g.null()
    out = g.op("aten.linear.default", xi, wi, bi, g.tensor(x.shape[:-1] + (w.shape[0],)))
    (got,) = g.run(device, out)
    want = x.astype(np.float64) @ w.astype(np.float64).T + (0 if b is None else b)
    return got, want


VARIANTS = ["tiled", "dot", "gemv4-64x4", "gemv4-32x2", "gemv-256x1", "gemvsg4-32x4",
            "gemvsg4-128x2", "gemv4-32x2x4", "gemvsg8-32x4x8", "gemv-64x1x1", "gemv4-32x2g4",
            "gemvsg4-8x2g2", "gemvsg-32x4g8", "gemvsg4-64x1x4g2", "mm4-16x8",
            "mm4-8x16", "mm-8x8", "mm4-8x16s4", "mm-8x8s3", "mm4-16x8s8", "mm4-16x4", "mm4-4x16"]


@pytest.mark.parametrize("lead,k,n", [((3,), 37, 5), ((1,), 1, 1), ((70,), 45, 33),
                                      ((2, 3), 37, 5), ((2, 5, 7), 64, 130), ((33,), 16, 32),
                                      ((1,), 4096, 3), ((5,), 1, 9), ((2,), 6, 1)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("variant", VARIANTS)
def test_linear_any_shape(device, lead, k, n, bias, variant):
    if variant.startswith("gemvsg") and not {"subgroup", "subgroups"} & device.info.features:
        pytest.skip("the adapter has no subgroups")
    got, want = _linear(device, rand(*lead, k), rand(n, k), rand(n) if bias else None, variant)
    close(got, want, 1e-4 if k > 40 else 1e-5)


@pytest.mark.parametrize("variant", ["gemv4-64x4", "mm4-16x8", "tiled", "dot", None])
def test_linear_many_rows(device, variant):
    # 70000 rows: grids past 65535 workgroups fold into two dimensions
    got, want = _linear(device, rand(70000, 12), rand(7, 12), rand(7), variant)
    close(got, want)


@pytest.mark.parametrize("m,k,n", [(1, 576, 1536), (1, 1536, 576), (4, 576, 2048),
                                   (64, 576, 1536), (130, 96, 200)])
def test_linear_chosen_variant(device, m, k, n):
    got, want = _linear(device, rand(m, k), rand(n, k), rand(n))
    close(got, want, 1e-4)


def test_linear_with_small_workgroups_and_folded_grid(device):
    small = Limited(device, maxComputeInvocationsPerWorkgroup=16,
                    maxComputeWorkgroupsPerDimension=4)
    # 16 invocations: tiles of 16 x 16, 4 x 2 of them on a folded 3 x 3 grid
    got, want = _linear(small, rand(50, 19), rand(23, 19), rand(23), "tiled")
    close(got, want)


def test_linear_dot_form_on_a_folded_grid(device):
    small = Limited(device, maxComputeInvocationsPerWorkgroup=16,
                    maxComputeWorkgroupsPerDimension=16)
    # 50 x 23 outputs, 16 per workgroup: 72 workgroups folded to 9 x 8
    got, want = _linear(small, rand(50, 19), rand(23, 19), rand(23), "dot")
    close(got, want)


def test_linear_refuses_an_unknown_variant(device):
    # refused where the options are read, naming the valid ones
    with pytest.raises(InputError, match="matmul variant 'fast'"):
        _linear(device, rand(2, 3), rand(4, 3), None, "fast")


# --- reductions ------------------------------------------------------------------------
def _softmax(x, dim):
    e = np.exp(x.astype(np.float64) - x.max(axis=dim, keepdims=True))
    return e / e.sum(axis=dim, keepdims=True)


@pytest.mark.parametrize("shape,dim", [((3, 7), 0), ((3, 7), 1), ((3, 7), -1), ((2, 3, 4), 1),
                                       ((2, 1, 5), 1), ((5, 300), -1), ((300, 3), 0), ((6,), 0)])
@pytest.mark.parametrize("form", ["tree", "lines"])
def test_softmax_over_any_dim(device, shape, dim, form):
    x = rand(*shape, scale=3.0)
    g = G(options={"variants": {"reduce": form}})
    out = g.op("aten._softmax.default", g.input(x), g.int(dim), g.bool(False), g.tensor(shape))
    (got,) = g.run(device, out)
    close(got, _softmax(x, dim))


@pytest.mark.parametrize("form", ["tree", "lines"])
def test_softmax_is_exact_for_large_logits(device, form):
    x = np.array([[1000.0, 999.0, -1000.0, 0.0], [-5e4, -5e4 + 1, -5e4 + 2, 88.0],
                  [3e38, 3e38, -3e38, 1.0]], np.float32)
    g = G(options={"variants": {"reduce": form}})
    out = g.op("aten._softmax.default", g.input(x), g.int(1), g.bool(False), g.tensor(x.shape))
    (got,) = g.run(device, out)
    close(got, _softmax(x, 1))


@pytest.mark.parametrize("shape,dims,keep", [((3, 7), [-1], False), ((2, 3, 4), [1], False),
                                             ((2, 3, 4), [1], True), ((2, 3, 4), [0, 2], True),
                                             ((2, 3, 4, 5), [3, 1], False), ((2, 3, 4), [], False),
                                             ((2, 1000), [1], True), ((1000, 3), [0], False),
                                             ((1, 8, 1), [-1], True)])
@pytest.mark.parametrize("form", ["tree", "lines"])
def test_mean_over_any_dims(device, shape, dims, keep, form):
    x = rand(*shape)
    axis = tuple(dims) if dims else None
    want = x.astype(np.float64).mean(axis=axis, keepdims=keep)
    g = G(options={"variants": {"reduce": form}})
    out = g.op("aten.mean.dim", g.input(x), g.ints(dims), g.bool(keep), g.null(),
               g.tensor(np.shape(want)))
    (got,) = g.run(device, out)
    close(got, want)


@pytest.mark.parametrize("form,max_groups", [("tree", 6), ("lines", 3)])
def test_reductions_with_small_workgroups_and_folded_grid(device, form, max_groups):
    # tree: 29 and 33 workgroups on a 6-wide grid; lines (8 a workgroup): 4 and 5 on a
    # 3-wide one: folded either way
    small = Limited(device, maxComputeInvocationsPerWorkgroup=8,
                    maxComputeWorkgroupsPerDimension=max_groups)
    x = rand(29, 33)
    g = G(options={"variants": {"reduce": form}})
    xi = g.input(x)
    mean = g.op("aten.mean.dim", xi, g.ints([1]), g.bool(False), g.null(), g.tensor((29,)))
    soft = g.op("aten._softmax.default", xi, g.int(0), g.bool(False), g.tensor(x.shape))
    got_mean, got_soft = g.run(small, mean, soft)
    close(got_mean, x.astype(np.float64).mean(1))
    close(got_soft, _softmax(x, 0))


def test_mean_rejects_a_wrong_output_shape(device):
    g = G()
    out = g.op("aten.mean.dim", g.input(rand(2, 3)), g.ints([1]), g.bool(True), g.null(),
               g.tensor((2,)))
    with pytest.raises(FormatError, match="expected"):
        g.run(device, out)


# --- elementwise -----------------------------------------------------------------------
@pytest.mark.parametrize("name,fn", [("aten.sub.Tensor", lambda a, b: a - 2.5 * b),
                                     ("aten.mul.Tensor", np.multiply),
                                     ("aten.div.Tensor", np.divide)])
def test_binary_family_broadcasts(device, name, fn):
    a, b = rand(2, 3, 5), rand(3, 1) + 3.0
    g = G()
    args = [g.input(a), g.input(b)] + ([g.double(2.5)] if name == "aten.sub.Tensor" else [])
    out = g.op(name, *args, g.tensor(a.shape))
    (got,) = g.run(device, out)
    close(got, fn(a.astype(np.float64), b.astype(np.float64)))


POW_BASES = np.array([-3.0, -2.0, -0.5, 0.0, 0.25, 1.0, 1.5, 2.0, 7.0, -1e-3, 1e10, np.nan],
                     np.float32)


@pytest.mark.parametrize("exponent", [2, 3, 0.5, -1, 2.0, 4, -3, 0, 1, -2, -0.5, 2.5, 1e-3,
                                      31])
def test_pow_scalar_follows_torch(device, exponent):
    g = G()
    e = g.int(exponent) if isinstance(exponent, int) else g.double(exponent)
    out = g.op("aten.pow.Tensor_Scalar", g.input(POW_BASES), e, g.tensor(POW_BASES.shape))
    (got,) = g.run(device, out)
    with np.errstate(all="ignore"):
        want = np.power(POW_BASES.astype(np.float64), float(exponent)).astype(np.float32)
    if exponent == 0:
        want[:] = 1.0  # torch: x ** 0 == 1, NaN included
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=0)


def test_sigmoid_rsqrt_and_add_scalar(device):
    x = np.array([-100.0, -88.0, -20.0, -1.0, 0.0, 0.5, 20.0, 88.0, 100.0, 3.0], np.float32)
    g = G()
    xi = g.input(x)
    sig = g.op("aten.sigmoid.default", xi, g.tensor(x.shape))
    pos = g.op("aten.add.Scalar", xi, g.double(101.0), g.int(1), g.tensor(x.shape))
    rs = g.op("aten.rsqrt.default", pos, g.tensor(x.shape))
    shifted = g.op("aten.add.Scalar", xi, g.int(3), g.double(-0.5), g.tensor(x.shape))
    got_sig, got_rs, got_shift = g.run(device, sig, rs, shifted)
    x64 = x.astype(np.float64)
    close(got_sig, 1.0 / (1.0 + np.exp(-x64)))
    assert got_sig[0] >= 0 and got_sig[-2] == 1.0
    close(got_rs, 1.0 / np.sqrt(x64 + 101.0))
    close(got_shift, x64 - 1.5)


def test_prepack_feeds_a_constant(device):
    w, x = rand(4), rand(3, 4)
    g = G()
    packed = g.op("et_vk.prepack.default", g.const(w), g.tensor((4,)))
    out = g.op("aten.mul.Tensor", g.input(x), packed, g.tensor(x.shape))
    (got,) = g.run(device, out)
    close(got, x * w)


# --- views -----------------------------------------------------------------------------
@pytest.mark.parametrize("shape,perm", [((2, 3, 4), [2, 0, 1]), ((2, 3, 4), [0, 2, 1]),
                                        ((1, 5), [1, 0]), ((2, 1, 3, 1, 4), [4, 3, 0, 1, 2]),
                                        ((2, 3, 2, 2, 1, 2, 3, 2), [7, 6, 5, 4, 3, 2, 1, 0]),
                                        ((3, 4), [-1, -2])])
def test_permute(device, shape, perm):
    x = rand(*shape)
    want = np.transpose(x, perm)
    g = G()
    out = g.op("aten.permute_copy.default", g.input(x), g.ints(perm), g.tensor(want.shape))
    (got,) = g.run(device, out)
    close(got, want)


def test_permute_rejects_a_non_permutation(device):
    g = G()
    out = g.op("aten.permute_copy.default", g.input(rand(2, 3)), g.ints([0, 0]),
               g.tensor((2, 3)))
    with pytest.raises(FormatError, match="permutation"):
        g.run(device, out)


def test_view_chain_survives_buffer_reuse(device):
    """b views a; a's memory object is rewritten (c) while b is still read: b must copy."""
    x = rand(2, 3, 4)
    g = G()
    a = g.op("aten.sigmoid.default", g.input(x), g.tensor((2, 3, 4), mem_obj=0))
    b = g.op("aten.view_copy.default", a, g.ints([6, -1]), g.tensor((6, 4), mem_obj=1))
    c = g.op("aten.sigmoid.default", b, g.tensor((6, 4), mem_obj=0))
    s = g.op("aten.unsqueeze_copy.default", c, g.int(-1), g.tensor((6, 4, 1), mem_obj=2))
    q = g.op("aten.squeeze_copy.dims", s, g.ints([2, 0]), g.tensor((6, 4), mem_obj=3))
    d = g.op("aten.clone.default", q, g.null(), g.tensor((6, 4), mem_obj=4))
    out = g.op("aten.mul.Tensor", b, d, g.tensor((6, 4)))
    (got,) = g.run(device, out)
    sig = 1.0 / (1.0 + np.exp(-x.astype(np.float64).reshape(6, 4)))
    close(got, sig * (1.0 / (1.0 + np.exp(-sig))))


def test_view_output_is_a_copy_into_the_graph_output(device):
    x = rand(4, 6)
    g = G()
    out = g.op("aten.view_copy.default", g.input(x), g.ints([2, 12]), g.tensor((2, 12)))
    (got,) = g.run(device, out)
    close(got, x.reshape(2, 12))


def test_to_dim_order_copy_rounds_to_float16(device):
    x = np.array([1.0, 1.0 + 2**-11, 1.0 + 3 * 2**-11, 65519.0, 65520.0, -7e4, 2**-25,
                  3 * 2**-25, 1e-8, -0.1, np.inf, np.nan, 0.3333333], np.float32)
    g = G()
    xi = g.input(x)
    nulls = [g.null() for _ in range(4)]
    half = g.op("dim_order_ops._to_dim_order_copy.default", xi, *nulls, g.bool(False),
                g.ints([0]), g.tensor(x.shape, dtype=dtypes.FLOAT16))
    back = g.op("dim_order_ops._to_dim_order_copy.default", half, *nulls, g.bool(False),
                g.null(), g.tensor(x.shape))
    (got,) = g.run(device, back)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).astype(np.float32)
    np.testing.assert_array_equal(got, want)


def test_to_dim_order_copy_refuses_other_conversions(device):
    g = G()
    xi = g.input(rand(3))
    out = g.op("dim_order_ops._to_dim_order_copy.default", xi, *[g.null() for _ in range(4)],
               g.bool(False), g.null(), g.tensor((3,), dtype=dtypes.INT32))
    with pytest.raises(UnsupportedError, match="int32"):
        g.run(device, out)


# --- activations (unary family) ----------------------------------------------------------
ACT_X = np.concatenate([EDGES, rand(300, scale=4.0), rand(50, scale=30.0)])


@pytest.mark.parametrize("case", list(ACTIVATIONS))
def test_activation_follows_torch_at_the_edges(device, case):
    name, extra, fn = ACTIVATIONS[case]
    g = G()
    out = g.op(name, g.input(ACT_X), *extra(g), g.tensor(ACT_X.shape))
    (got,) = g.run(device, out)
    # gelu's tanh form in its far tail (x < -5): e^{-2u} magnifies the f32 rounding of u
    check_activation(got, activation_want(fn, ACT_X), ACT_X, 1e-5 if case == "gelu_tanh" else 2e-6)


def test_gelu_and_tanh_are_accurate_on_a_dense_grid(device):
    """erf to ~1e-7 of 1: gelu within 2e-7 absolute + a few ulp; tanh within a few ulp."""
    x = np.linspace(-12, 12, 200001, dtype=np.float32)
    g = G()
    xi = g.input(x)
    outs = [g.op("aten.gelu.default", xi, g.string(form), g.tensor(x.shape))
            for form in ("none", "tanh")]
    outs.append(g.op("aten.tanh.default", xi, g.tensor(x.shape)))
    got_erf, got_tanh_form, got_tanh = g.run(device, *outs)
    x64 = x.astype(np.float64)
    erfc = np.array([math.erfc(-v / math.sqrt(2)) for v in x64])
    np.testing.assert_allclose(got_erf, 0.5 * x64 * erfc, rtol=4e-7, atol=2e-7)
    away = np.abs(x64) > 1e-3
    assert np.max(np.abs(got_erf[away] / x64[away] * 2 - erfc[away])) < 3e-7  # 1 + erf
    np.testing.assert_allclose(got_tanh_form, [gelu_tanh(v) for v in x64], rtol=4e-7, atol=2e-7)
    np.testing.assert_allclose(got_tanh, np.tanh(x64), rtol=4e-7, atol=0)


def test_exp_is_accurate_over_its_range(device):
    x = np.linspace(-103, 88.72, 100003, dtype=np.float32)
    g = G()
    (got,) = g.run(device, g.op("aten.exp.default", g.input(x), g.tensor(x.shape)))
    want = np.exp(x.astype(np.float64))
    normal = want > 1.2e-38
    np.testing.assert_allclose(got[normal], want[normal], rtol=3e-7)
    assert np.all(got[~normal] <= 1.2e-38) and np.isfinite(got).all()


def test_gelu_rejects_an_unknown_form(device):
    g = G()
    out = g.op("aten.gelu.default", g.input(rand(3)), g.string("sigmoid"), g.tensor((3,)))
    with pytest.raises(UnsupportedError, match="approximate"):
        g.run(device, out)


# --- embedding -------------------------------------------------------------------------
def _embedding(device, weight, indices, idx_dtype=dtypes.INT64, const_indices=False,
               with_flag=False):
    g = G()
    ii = g.const(indices, idx_dtype) if const_indices else g.input(indices, idx_dtype)
    out = g.op("aten.embedding.default", g.const(weight), ii, g.int(-1), g.bool(False),
               g.bool(False), g.tensor(indices.shape + weight.shape[1:]))
    (got,) = g.run(device, out)
    return (got, g.id_flags[0]) if with_flag else got


def embedding_want(weight, indices):
    """torch's embedding, with a row of zeros for an index outside [0, vocab)."""
    padded = np.concatenate([weight, np.zeros((1, weight.shape[1]), weight.dtype)])
    return padded[np.where((indices >= 0) & (indices < len(weight)), indices, len(weight))]


@pytest.mark.parametrize("shape", [(5,), (2, 3), (1,), (2, 1, 3)])
@pytest.mark.parametrize("idx_dtype", [dtypes.INT64, dtypes.INT32])
def test_embedding_any_index_shape(device, shape, idx_dtype):
    weight = rand(7, 13)  # odd vocabulary and width
    indices = RNG.integers(0, 7, shape)
    got = _embedding(device, weight, indices, idx_dtype)
    assert got.shape == shape + (13,)
    np.testing.assert_array_equal(got, weight[indices])


def test_embedding_out_of_range_indices_write_zeros_and_set_the_flag(device):
    """torch raises; a kernel cannot, so a row of zeros stands in and the op's id flag
    counts the bad ids and records one (position, value): execute raises from it."""
    weight = rand(7, 13) + 5.0
    indices = np.array([[0, -1, 7], [6, 100, -2147483648]])
    got, (count, claimed, pos, value) = _embedding(device, weight, indices, with_flag=True)
    np.testing.assert_array_equal(got, embedding_want(weight, indices))
    assert not got[0, 1].any() and not got[1, 2].any() and got[1, 0].all()
    assert count == 4 and claimed == 1 and indices.reshape(-1)[pos] == value
    assert not 0 <= value < 7
    _, flag = _embedding(device, weight, np.array([0, 6, 3]), with_flag=True)
    assert flag == (0, 0, 0, 0)


def test_embedding_of_constant_int64_indices_on_a_folded_grid(device):
    small = Limited(device, maxComputeInvocationsPerWorkgroup=8,
                    maxComputeWorkgroupsPerDimension=4)
    weight, indices = rand(11, 5), RNG.integers(0, 11, (3, 3))  # 45 outputs: 6 groups -> 3 x 2
    got = _embedding(small, weight, indices, const_indices=True)
    np.testing.assert_array_equal(got, weight[indices])


def test_embedding_rejects_float_indices_and_a_wrong_output(device):
    g = G()
    out = g.op("aten.embedding.default", g.const(rand(7, 3)), g.input(rand(4)), g.int(-1),
               g.bool(False), g.bool(False), g.tensor((4, 3)))
    with pytest.raises(UnsupportedError, match="expected an int32 or int64 tensor"):
        g.run(device, out)
    g = G()
    out = g.op("aten.embedding.default", g.const(rand(7, 3)),
               g.input(np.zeros(4, np.int64), dtypes.INT64), g.int(-1), g.bool(False),
               g.bool(False), g.tensor((4, 4)))
    with pytest.raises(FormatError, match=r"indices' shape \[4\] plus \[3\]"):
        g.run(device, out)


def test_no_buffers_leak(device):
    assert device.live_buffer_count == 0
