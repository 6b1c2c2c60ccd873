"""The CPU reference of aten.native_layer_norm: a ValueList output [out, mean, rstd]."""

from __future__ import annotations

import numpy as np
import pytest
from pte_webgpu.errors import FormatError
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ListValue, Null, OpCall, Scalar, TensorValue
from pte_webgpu.reference import interpreter as reference

F32 = dtypes.BY_NAME["float32"]
RNG = np.random.default_rng(3)


def run_ln(x, k, w=None, b=None, eps=Scalar("double", 1e-5), n_out=3):
    """native_layer_norm over the last ``k`` dims through reference.run_op_outputs."""
    stat = x.shape[:x.ndim - k] + (1,) * k
    values = [TensorValue(F32, x.shape),
              ListValue("int_list", x.shape[x.ndim - k:]),
              TensorValue(F32, w.shape) if w is not None else Null(),
              TensorValue(F32, b.shape) if b is not None else Null(),
              eps,
              TensorValue(F32, x.shape), TensorValue(F32, stat), TensorValue(F32, stat)]
    values.append(ListValue("value_list", (5, 6, 7)[:n_out]))
    arrays = {0: reference.from_tensor(x)}
    if w is not None:
        arrays[2] = reference.from_tensor(w)
    if b is not None:
        arrays[3] = reference.from_tensor(b)
    op = OpCall("aten.native_layer_norm.default", (0, 1, 2, 3, 4, 8))
    outs = reference.run_op_outputs(op, values, arrays.__getitem__, "test")
    return [np.array(outs[v].values).reshape(outs[v].shape) for v in (5, 6, 7)]


def numpy_ln(x, k, w, b, eps):
    x = x.astype(np.float64)
    axes = tuple(range(x.ndim - k, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    rstd = 1 / np.sqrt(((x - mean) ** 2).mean(axis=axes, keepdims=True) + eps)
    out = (x - mean) * rstd * (1.0 if w is None else w) + (0.0 if b is None else b)
    return [out, mean, rstd]


@pytest.mark.parametrize("shape,k", [((3, 7), 1), ((2, 3, 4), 2), ((5, 1), 1), ((4,), 1)])
@pytest.mark.parametrize("affine", [False, True])
def test_matches_numpy(shape, k, affine):
    x = RNG.standard_normal(shape).astype(np.float32) * 2 + 1
    w = RNG.standard_normal(shape[len(shape) - k:]).astype(np.float32) if affine else None
    b = RNG.standard_normal(shape[len(shape) - k:]).astype(np.float32) if affine else None
    for got, want in zip(run_ln(x, k, w, b), numpy_ln(x, k, w, b, 1e-5)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_eps_int_and_null():
    x = RNG.standard_normal((2, 5)).astype(np.float32) * 0.01
    for eps, value in ((Scalar("int", 1), 1.0), (Null(), 2.0 ** -23)):
        for got, want in zip(run_ln(x, 1, eps=eps), numpy_ln(x, 1, None, None, value)):
            np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_constant_row_and_large_offset():
    x = np.stack([np.full(16, 5.0, np.float32),
                  np.float32(1e4) + RNG.standard_normal(16).astype(np.float32) * 0.01])
    out, mean, rstd = run_ln(x, 1)
    want = numpy_ln(x, 1, None, None, 1e-5)
    assert np.all(out[0] == 0) and rstd[0, 0] == pytest.approx(1 / np.sqrt(1e-5), rel=1e-6)
    np.testing.assert_allclose(out, want[0], rtol=1e-5, atol=1e-5)


def test_run_op_returns_the_first_output():
    x = RNG.standard_normal((2, 3)).astype(np.float32)
    values = [TensorValue(F32, (2, 3)), ListValue("int_list", (3,)), Null(), Null(),
              Scalar("double", 1e-5), TensorValue(F32, (2, 3)), TensorValue(F32, (2, 1)),
              TensorValue(F32, (2, 1)), ListValue("value_list", (5, 6, 7))]
    op = OpCall("aten.native_layer_norm.default", (0, 1, 2, 3, 4, 8))
    out = reference.run_op(op, values, {0: reference.from_tensor(x)}.__getitem__, "test")
    assert out.shape == (2, 3)


def test_a_short_output_list_is_refused():
    with pytest.raises(FormatError, match="computed 3 outputs"):
        run_ln(RNG.standard_normal((2, 3)).astype(np.float32), 1, n_out=2)
