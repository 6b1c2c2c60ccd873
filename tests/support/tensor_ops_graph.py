"""Hand-built graphs of the general tensor ops (tests/native/test_tensor_ops.py): run on the
GPU and through each op's CPU reference, both checked against numpy's answer."""

from __future__ import annotations

import numpy as np
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import TensorValue
from pte_webgpu.reference import interpreter
from pte_webgpu.reference.interpreter import Array

NP_DTYPE = {"float32": np.float32, "float16": np.float16, "int32": np.int32,
            "int64": np.int64, "bool": np.bool_}


def reference_outputs(g, outputs) -> list[np.ndarray]:
    """The graph run through the op registry's CPU references (pure Python)."""
    arrays = {vid: Array(tuple(a.shape), [v.item() for v in np.asarray(a).reshape(-1)])
              for vid, a in zip(g.inputs, g.feeds)}
    consts = {}
    for ref, vid in zip(g.constants, [i for i, v in enumerate(g.values)
                                      if isinstance(v, TensorValue) and v.is_constant]):
        t = g.values[vid]
        data = np.frombuffer(bytes(g.blob[ref.offset:ref.offset + ref.length]),
                             NP_DTYPE[t.dtype.name]).reshape(t.shape)
        consts[vid] = Array(t.shape, [v.item() for v in data.reshape(-1)])

    def read(vid):
        return arrays[vid] if vid in arrays else consts[vid]
    for i, op in enumerate(g.ops):
        arrays.update(interpreter.run_op_outputs(op, g.values, read, f"op {i}"))
    result = []
    for vid in outputs:
        t = g.values[vid]
        np_type = np.float32 if t.dtype.name in ("float32", "float16") else NP_DTYPE[t.dtype.name]
        result.append(np.array(arrays[vid].values, np_type).reshape(t.shape))
    return result


def same(got, want, rtol=1e-4, what=""):
    """NaN where want has NaN; infinities, zeros (with sign) and integers exact; else close."""
    got = np.asarray(got)
    want = np.asarray(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    if want.dtype.kind in "biu":
        np.testing.assert_array_equal(got.astype(np.int64), want.astype(np.int64), err_msg=what)
        return
    got, want = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)), (what, got, want)
    exact = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(got[exact], want[exact], err_msg=what)
    np.testing.assert_array_equal(np.signbit(got[exact]), np.signbit(want[exact]), err_msg=what)
    ok = ~np.isnan(want) & ~exact
    np.testing.assert_allclose(got[ok], want[ok], rtol=rtol, atol=rtol, err_msg=what)


def check(device, g, out, want, rtol=1e-4):
    """GPU and CPU reference of graph ``g`` against ``want`` (one output)."""
    t = g.values[out]
    (gpu,) = g.run(device, out) if t.dtype.name in ("float32", "float16") else \
        _run_raw(g, device, out)
    same(gpu, want, rtol, "gpu")
    (ref,) = reference_outputs(g, [out])
    same(ref, want, rtol if t.dtype.name != "float16" else max(rtol, 1e-3), "reference")


def _run_raw(g, device, out):
    from tests.support.gpu_thread import run_sync
    g.outputs = [out]
    return run_sync(g._run(device, as_f32=False))


__all__ = ["check", "same", "reference_outputs", "dtypes"]
