"""The CPU reference (pte_webgpu.reference, pure Python) of the 4-bit linears: on hand-made
operands against a float64 numpy product of the dequantized weights, and on a quantized
tiny-llama program exported by ExecuTorch (tests/fixtures/quant) against eager torch."""

import time
from pathlib import Path

import numpy as np
import pytest
from pte_webgpu import formats, reference
from pte_webgpu.app import steps
from pte_webgpu.errors import FormatError
from pte_webgpu.formats import npy
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ListValue, Null, Scalar, TensorValue
from pte_webgpu.ops.cpu_reference import Array
from pte_webgpu.ops.linear_q4 import reference_fused, reference_q4gsw, reference_qcs4w

from tests.support.q4_graphs import pack_q4gsw, pack_qcs4w, quantize, scales_rows
from tests.support.q4_graphs import reference as numpy_reference

QUANT = Path(__file__).parents[1] / "fixtures" / "quant"
F32, U8 = dtypes.FLOAT32, dtypes.UINT8
RNG = np.random.default_rng(5)


def _operands(arrays):
    """(values, read) over numpy arrays given as (dtype, array) or graph values."""
    values, table = [], {}
    for a in arrays:
        if isinstance(a, tuple):
            dtype, arr = a
            table[len(values)] = Array(arr.shape, arr.ravel().tolist())
            a = TensorValue(dtype, tuple(arr.shape), constant_id=0)
        values.append(a)
    return values, table.__getitem__


@pytest.mark.parametrize("m,n,k,group", [(1, 20, 48, 16), (3, 10, 36, 4)])
def test_q4gsw_reference(m, n, k, group):
    w, s = quantize(n, k, group)
    x, b = RNG.standard_normal((m, k)), RNG.standard_normal(n)
    values, read = _operands([(F32, x), (U8, pack_q4gsw(w)), (F32, scales_rows(s)),
                              Scalar("int", group), (F32, b), TensorValue(F32, (m, n))])
    got = np.array(reference_q4gsw(read, values, tuple(range(6)))).reshape(m, n)
    np.testing.assert_allclose(got, numpy_reference(x, w, s, b), rtol=1e-12, atol=1e-12)


def test_qcs4w_reference():
    n, k = 12, 20
    w = RNG.integers(-8, 8, (n, k)).astype(np.int8)
    s = RNG.uniform(0.01, 0.2, (n, 1))
    x = RNG.standard_normal((2, k))
    values, read = _operands([(F32, x), (U8, pack_qcs4w(w)), (F32, s[:, 0]),
                              TensorValue(F32, (2, n))])
    got = np.array(reference_qcs4w(read, values, (0, 1, 2, 3))).reshape(2, n)
    np.testing.assert_allclose(got, numpy_reference(x, w, s), rtol=1e-12, atol=1e-12)


def test_fused_reference_splits_like_the_parts():
    k, group, widths = 48, 16, (20, 12)
    x = RNG.standard_normal((2, k))
    parts = [quantize(n, k, group, seed=i) for i, n in enumerate(widths)]
    packed = np.concatenate([pack_q4gsw(w) for w, _ in parts])
    rows = [scales_rows(s) for _, s in parts]
    scales = np.concatenate([r.ravel() for r in rows])
    layout = ListValue("int_list", (rows[0].shape[1], rows[1].shape[1], 0, rows[0].size))
    values, read = _operands([(F32, x), (U8, packed), (F32, scales), Scalar("int", group),
                              Null(), layout, TensorValue(F32, (2, 20)),
                              TensorValue(F32, (2, 12)), ListValue("value_list", (6, 7)),
                              Null()])  # 9: no offsets
    got = reference_fused(read, values, (0, 1, 2, 3, 4, 5, 9, 8))
    for out, (w, s), n in zip(got, parts, widths):
        np.testing.assert_allclose(np.array(out).reshape(2, n), numpy_reference(x, w, s),
                                   rtol=1e-12, atol=1e-12)


def test_reference_refuses_nan_scales():
    w, s = quantize(20, 48, 16)
    rows = scales_rows(s)
    rows[1, 3] = np.nan
    values, read = _operands([(F32, RNG.standard_normal((1, 48))), (U8, pack_q4gsw(w)),
                              (F32, rows), Scalar("int", 16), Null(), TensorValue(F32, (1, 20))])
    with pytest.raises(FormatError, match="linear_q4gsw.*nan"):
        reference_q4gsw(read, values, tuple(range(6)))


@pytest.mark.skipif(not (QUANT / "llama_4w_g32_static.pte").exists(),
                    reason="tests/fixtures/quant not built")
def test_reference_runs_a_quantized_llama_step():
    """Step 0 of the exported 4w G32 tiny llama (15 q4gsw linears) on the CPU reference,
    against eager torch of the same quantized model."""
    program = formats.open_program((QUANT / "llama_4w_g32_static.pte").read_bytes())
    arrays = npy.read_npz((QUANT / "llama_4w_g32_static.npz").read_bytes(), "reference")
    _, calls = steps.plan_calls(arrays)
    start = time.perf_counter()
    (out,) = reference.run_program(program, calls[0])
    got, want = out.numpy(), arrays["step0_out0"].numpy()
    assert np.abs(got - want).max() <= 1e-4, np.abs(got - want).max()
    assert time.perf_counter() - start < 120


def test_reference_runs_exported_qcs4w():
    folder = Path(__file__).parents[1] / "fixtures" / "qcs4w"
    for name in ("qcs4w_k48_n20_bias_m9", "qcs4w_k20_n12_m5"):
        program = formats.open_program((folder / f"{name}.pte").read_bytes())
        arrays = np.load(folder / f"{name}.npz")
        (out,) = reference.run_program(program, [arrays["in0"]])
        np.testing.assert_allclose(out.numpy(), arrays["out0"], rtol=1e-5, atol=1e-6)
