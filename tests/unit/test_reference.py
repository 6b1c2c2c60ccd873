"""The pure-Python CPU reference: every op the GPU registry builds, and whole programs
agreeing with torch's outputs stored in the fixtures."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from pte_webgpu import formats
from pte_webgpu.errors import InputError, UnsupportedError
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ListValue, Null, OpCall, Scalar, TensorValue
from pte_webgpu.model.tensor import Tensor
from pte_webgpu.ops import binary, rms_norm
from pte_webgpu.ops.registry import supported_ops
from pte_webgpu.reference import interpreter as reference

from tests.support.fixture_index import FIXTURES, INDEX, needed_ops, tolerance

SUPPORTED = set(reference.supported_ops())


def computable(entry) -> bool:
    return needed_ops(entry) <= SUPPORTED


def open_fixture(entry):
    folder = (FIXTURES / entry["name"]).parent  # extra/ fixtures name files relative to it
    pte = (folder / entry["pte"]).read_bytes()
    files = [(Path(p).name, (folder / p).read_bytes()) for p in entry["ptd_files"]]
    arrays = dict(np.load(folder / entry["npz"]))
    inputs = [arrays[k] for k in sorted(arrays) if k.startswith("in")]
    outputs = [arrays[k] for k in sorted(arrays) if k.startswith("out")]
    return formats.open_program(pte, files), inputs, outputs


def test_reference_covers_every_gpu_op():
    assert SUPPORTED == set(supported_ops())


@pytest.mark.parametrize("entry", [e for e in INDEX if computable(e)], ids=lambda e: e["name"])
def test_matches_torch(entry):
    program, inputs, expected = open_fixture(entry)
    got = reference.run_program(program, inputs)
    assert len(got) == len(expected)
    tol = tolerance(entry)
    for g, want in zip(got, expected):
        assert g.shape == want.shape and g.dtype.name == want.dtype.name
        np.testing.assert_allclose(g.numpy().astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("entry", [e for e in INDEX if not computable(e)], ids=lambda e: e["name"])
def test_other_ops_are_unsupported(entry):
    program, inputs, _ = open_fixture(entry)
    with pytest.raises(UnsupportedError, match="has no CPU reference"):
        reference.run_program(program, inputs)


def test_fixture_sets_cover_both_cases():
    assert sum(map(computable, INDEX)) >= 30 and not all(map(computable, INDEX))
    kernels = [e for e in INDEX if computable(e) and e["non_delegated_ops"]]
    assert kernels  # a plan with a non-delegated kernel runs through the reference too


# --- single ops against numpy ------------------------------------------------------------

F32, F16 = dtypes.BY_NAME["float32"], dtypes.BY_NAME["float16"]


def run_one(name: str, tensors: list, args: list, out_shape, out_dtype=F32) -> np.ndarray:
    """Run op ``name`` on numpy ``tensors`` (value ids 0..) then non-tensor ``args``."""
    values = [TensorValue(F32, t.shape) for t in tensors] + list(args)
    values.append(TensorValue(out_dtype, tuple(out_shape)))
    arrays = {i: reference.from_tensor(t) for i, t in enumerate(tensors)}
    op = OpCall(name, tuple(range(len(values))))
    out = reference.run_op(op, values, arrays.__getitem__, "test")
    return np.array(out.values).reshape(out.shape)


def ints(*items):
    return ListValue("int_list", tuple(items))


RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3, 4)).astype(np.float32)
X64 = X.astype(np.float64)


@pytest.mark.parametrize("a_shape,b_shape", [
    ((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (1, 3, 1)), ((4, 4), (4, 1)), ((2, 3, 4), (4,)),
    ((5,), (3, 1, 5)), ((1,), (2, 2)), ((), (3,))])
def test_add_broadcasts_like_numpy(a_shape, b_shape):
    a = RNG.standard_normal(a_shape).astype(np.float32)
    b = RNG.standard_normal(b_shape).astype(np.float32)
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    got = binary.add(reference.from_tensor(a), reference.from_tensor(b), 0.5, out_shape)
    np.testing.assert_allclose(np.array(got).reshape(out_shape),
                               a.astype(np.float64) + 0.5 * b.astype(np.float64), rtol=1e-12)


def test_binary_ops_broadcast_and_divide_by_zero_like_ieee():
    b = np.array([[2.0], [0.0], [-0.5]], dtype=np.float32)
    b64 = b.astype(np.float64)
    np.testing.assert_allclose(run_one("aten.sub.Tensor", [X, b], [Scalar("double", 2.0)],
                                       X.shape), X64 - 2 * b64, rtol=1e-6)
    np.testing.assert_allclose(run_one("aten.mul.Tensor", [X, b], [], X.shape), X64 * b64,
                               rtol=1e-6)
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(run_one("aten.div.Tensor", [X, b], [], X.shape), X64 / b64,
                                   rtol=1e-6)
    zeros = np.zeros((2,), np.float32)
    assert np.isnan(run_one("aten.div.Tensor", [zeros, zeros], [], (2,))).all()


def test_unary_ops_follow_ieee_at_the_edges():
    x = np.array([4.0, 0.0, -1.0, 100.0, -100.0, np.inf], dtype=np.float32)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        np.testing.assert_allclose(run_one("aten.rsqrt.default", [x], [], x.shape),
                                   1 / np.sqrt(x.astype(np.float64)), rtol=1e-6)
        np.testing.assert_allclose(run_one("aten.sigmoid.default", [x], [], x.shape),
                                   1 / (1 + np.exp(-x.astype(np.float64))), rtol=1e-6, atol=1e-40)
        for e in (2.0, 3.0, 0.5, -1.0):
            got = run_one("aten.pow.Tensor_Scalar", [x], [Scalar("double", e)], x.shape)
            np.testing.assert_allclose(got, np.power(x, np.float32(e)), rtol=1e-6)
    got = run_one("aten.add.Scalar", [X], [Scalar("int", 3), Scalar("double", 0.5)], X.shape)
    np.testing.assert_allclose(got, X64 + 1.5, rtol=1e-6)


@pytest.mark.parametrize("dims,keepdim", [([1], True), ([0, 2], False), ([-1], False),
                                          ([], True)])
def test_mean_over_dims(dims, keepdim):
    want = X64.mean(axis=tuple(dims) or None, keepdims=keepdim)
    got = run_one("aten.mean.dim", [X], [ints(*dims), Scalar("bool", keepdim), Null()],
                  want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_over_a_dim(dim):
    e = np.exp(X64 - X64.max(axis=dim, keepdims=True))
    got = run_one("aten._softmax.default", [X], [Scalar("int", dim), Scalar("bool", False)],
                  X.shape)
    np.testing.assert_allclose(got, e / e.sum(axis=dim, keepdims=True), rtol=1e-6)


@pytest.mark.parametrize("bias", [True, False])
def test_linear_batched_with_and_without_bias(bias):
    w = RNG.standard_normal((5, 4)).astype(np.float32)
    b = RNG.standard_normal((5,)).astype(np.float32)
    want = X64 @ w.T.astype(np.float64) + (b if bias else 0)
    tensors, args = ([X, w, b], []) if bias else ([X, w], [Null()])
    got = run_one("aten.linear.default", tensors, args, (2, 3, 5))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_permute_and_views():
    got = run_one("aten.permute_copy.default", [X], [ints(2, 0, 1)], (4, 2, 3))
    np.testing.assert_array_equal(got, X.transpose(2, 0, 1))
    got = run_one("aten.view_copy.default", [X], [ints(6, -1)], (6, 4))
    np.testing.assert_array_equal(got, X.reshape(6, 4))
    got = run_one("aten.unsqueeze_copy.default", [X], [Scalar("int", 0)], (1, 2, 3, 4))
    np.testing.assert_array_equal(got, X[None])


def test_to_dim_order_copy_rounds_to_the_out_dtype():
    args = [Null(), Null(), Null(), Null(), Scalar("bool", False), ints(0, 1, 2)]
    got = run_one("dim_order_ops._to_dim_order_copy.default", [X], args, X.shape, F16)
    np.testing.assert_array_equal(got, X.astype(np.float16).astype(np.float64))


def test_rms_norm_default_eps_on_zero_rows():
    x = reference.Array((2, 4), [0.0] * 4 + [1.0, -1.0, 1.0, -1.0])
    w = reference.Array((4,), [2.0] * 4)
    out = rms_norm.rms_norm(x, w, rms_norm.F32_EPS)
    assert out[:4] == [0.0] * 4
    assert out[4:] == pytest.approx([2.0, -2.0, 2.0, -2.0], rel=1e-6)


def test_rounds_to_float32_and_overflows_to_inf():
    assert reference.round_to([0.1], Tensor(b"\0" * 4, (1,)).dtype) == [np.float32(0.1).item()]
    assert reference.round_to([1e300, -1e300], Tensor(b"\0" * 4, (1,)).dtype) == \
        [float("inf"), float("-inf")]


# --- activations ---------------------------------------------------------------------------

INF, NAN = float("inf"), float("nan")
EDGE = np.array([-INF, -20.0, -6.0, -1.0, -1e-30, -0.0, 0.0, 1e-30, 0.5, 3.0, 100.0, INF, NAN],
                np.float32)


def same(got, want):
    """Equal values, NaNs at the same places, signed zeros with the same sign."""
    want = np.asarray(want, np.float64)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=0)
    assert np.array_equal(np.signbit(got[want == 0]), np.signbit(want[want == 0]))


@pytest.mark.parametrize("name,want", [
    ("aten.tanh.default", [-1, -1, -0.99998771, -0.76159416, -1e-30, -0.0, 0.0, 1e-30,
                           0.46211716, 0.99505475, 1, 1, NAN]),
    ("aten.relu.default", [0, 0, 0, 0, 0, -0.0, 0.0, 1e-30, 0.5, 3, 100, INF, NAN]),
    ("aten.neg.default", [INF, 20, 6, 1, 1e-30, 0.0, -0.0, -1e-30, -0.5, -3, -100, -INF, NAN]),
    ("aten.abs.default", [INF, 20, 6, 1, 1e-30, 0.0, 0.0, 1e-30, 0.5, 3, 100, INF, NAN]),
    ("aten.exp.default", [0, 2.0611536e-09, 2.4787522e-03, 0.36787944, 1, 1, 1, 1, 1.6487213,
                          20.085537, INF, INF, NAN]),
    ("aten.sqrt.default", [NAN, NAN, NAN, NAN, NAN, -0.0, 0.0, 1e-15, 0.70710678, 1.7320508,
                           10, INF, NAN]),
])
def test_plain_activations_follow_torch_at_the_edges(name, want):
    # values are torch 2.13's float32 results on these inputs
    with np.errstate(invalid="ignore"):
        same(run_one(name, [EDGE], [], EDGE.shape), want)


def test_gelu_both_forms_follow_torch():
    # as torch: -inf gives NaN in both forms (-inf * 0), +inf gives +inf; float64 tails
    exact = [NAN, -0.0, -5.9195259e-09, -0.15865525, -5e-31, -0.0, 0.0, 5e-31,
             0.34573123, 2.9959502, 100, INF, NAN]
    tanh = [NAN, -0.0, -8.4396469e-11, -0.15880801, -5e-31, -0.0, 0.0, 5e-31,
            0.34571401, 2.9963627, 100, INF, NAN]
    for form, want in (("none", exact), ("tanh", tanh)):
        got = run_one("aten.gelu.default", [EDGE], [Scalar("string", form)], EDGE.shape)
        same(got, want)
    with pytest.raises(UnsupportedError, match="approximate"):
        run_one("aten.gelu.default", [EDGE], [Scalar("string", "fast")], EDGE.shape)


def test_gelu_matches_erf_on_a_grid():
    x = np.linspace(-8, 8, 1001).astype(np.float32)
    x64 = x.astype(np.float64)
    want = np.array([0.5 * v * (1 + math.erf(v / math.sqrt(2))) for v in x64])
    got = run_one("aten.gelu.default", [x], [Scalar("string", "none")], x.shape)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-15)
    inner = np.sqrt(2 / np.pi) * (x64 + 0.044715 * x64 ** 3)
    got = run_one("aten.gelu.default", [x], [Scalar("string", "tanh")], x.shape)
    np.testing.assert_allclose(got, 0.5 * x64 * (1 + np.tanh(inner)), rtol=1e-6, atol=1e-15)


@pytest.mark.parametrize("name,low,high,want", [
    ("aten.clamp.default", Scalar("double", -0.5), Scalar("int", 2),
     [-0.5, -0.5, -0.5, -0.5, -1e-30, -0.0, 0.0, 1e-30, 0.5, 2, 2, 2, NAN]),
    ("aten.clamp.default", Scalar("double", 0.0), Null(),
     [0, 0, 0, 0, 0, -0.0, 0.0, 1e-30, 0.5, 3, 100, INF, NAN]),
    ("aten.clamp.default", Null(), Scalar("double", 1 / 3),
     [-INF, -20, -6, -1, -1e-30, -0.0, 0.0, 1e-30, 1 / 3, 1 / 3, 1 / 3, 1 / 3, NAN]),
    ("aten.clamp.default", Scalar("int", 2), Scalar("int", 1), [1] * 12 + [NAN]),
    ("aten.hardtanh.default", Scalar("double", -1.0), Scalar("double", 1.0),
     [-1, -1, -1, -1, -1e-30, -0.0, 0.0, 1e-30, 0.5, 1, 1, 1, NAN]),
])
def test_clamp_and_hardtanh_follow_torch(name, low, high, want):
    same(run_one(name, [EDGE], [low, high], EDGE.shape), want)


# --- embedding and integer tensors -------------------------------------------------------

I32, I64 = dtypes.INT32, dtypes.INT64


def run_embedding(weight, indices, idx_dtype=I64):
    values = [TensorValue(F32, weight.shape), TensorValue(idx_dtype, indices.shape),
              Scalar("int", -1), Scalar("bool", False), Scalar("bool", False),
              TensorValue(F32, indices.shape + weight.shape[1:])]
    arrays = {0: reference.from_tensor(weight),
              1: reference.from_tensor(indices.astype(idx_dtype.name))}
    out = reference.run_op(OpCall("aten.embedding.default", (0, 1, 2, 3, 3, 5)), values,
                           arrays.__getitem__, "test")
    return np.array(out.values, np.float32).reshape(out.shape)


@pytest.mark.parametrize("shape", [(5,), (2, 3), ()])
@pytest.mark.parametrize("idx_dtype", [I32, I64])
def test_embedding_any_index_shape(shape, idx_dtype):
    weight = RNG.standard_normal((9, 5)).astype(np.float32)
    indices = RNG.integers(0, 9, shape)
    np.testing.assert_array_equal(run_embedding(weight, indices, idx_dtype), weight[indices])


@pytest.mark.parametrize("bad", [4, -1])
def test_embedding_out_of_range_raises_as_torch_does(bad):
    weight = RNG.standard_normal((4, 3)).astype(np.float32) + 5
    with pytest.raises(InputError, match=rf"embedding: id {bad} at position 1 is outside "
                                         r"\[0, 4\)"):
        run_embedding(weight, np.array([[3, bad], [0, 0]]))


def test_integer_tensors_round_trip():
    ids = np.array([[1, -2], [2 ** 40, 3]], np.int64)
    a = reference.from_tensor(ids)
    assert a.values == [1, -2, 2 ** 40, 3] and all(isinstance(v, int) for v in a.values)
    assert reference.to_tensor(a, I64).numpy().tolist() == ids.tolist()
    assert reference.round_to([1.0, 2.0], I32) == [1, 2]
    with pytest.raises(UnsupportedError, match="float, int32 and int64"):
        reference.from_tensor(np.zeros(2, np.int16))
    # packed 4-bit weights (ops/linear_q4.py) are read as the bytes they are
    assert reference.from_tensor(np.array([0, 255], np.uint8)).values == [0, 255]
