"""The pure-Python CPU reference agrees with torch's outputs stored in the fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pte_webgpu import formats, reference
from pte_webgpu.errors import UnsupportedError
from pte_webgpu.runtime.tensor import Tensor

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
INDEX = json.loads((FIXTURES / "index.json").read_text())
SUPPORTED = set(reference.supported_ops())


def computable(entry) -> bool:
    return not entry["non_delegated_ops"] and all(
        op in SUPPORTED for ops in entry["vk_ops"] for op in ops)


def open_fixture(entry):
    pte = (FIXTURES / entry["pte"]).read_bytes()
    files = [(Path(p).name, (FIXTURES / p).read_bytes()) for p in entry["ptd_files"]]
    arrays = dict(np.load(FIXTURES / entry["npz"]))
    inputs = [arrays[k] for k in sorted(arrays) if k.startswith("in")]
    outputs = [arrays[k] for k in sorted(arrays) if k.startswith("out")]
    return formats.open_program(pte, files), inputs, outputs


def tolerance(entry) -> float:
    # fp16 graphs round every op output to half precision; torch computed the same in fp32
    return 1e-2 if "fp16" in entry["name"] else 1e-5


@pytest.mark.parametrize("entry", [e for e in INDEX if computable(e)], ids=lambda e: e["name"])
def test_matches_torch(entry):
    program, inputs, expected = open_fixture(entry)
    got = reference.run_program(program, inputs)
    assert len(got) == len(expected)
    for g, want in zip(got, expected):
        assert g.shape == want.shape and g.dtype.name == want.dtype.name
        tol = tolerance(entry)
        np.testing.assert_allclose(g.numpy().astype(np.float64), want.astype(np.float64),
                                   rtol=tol, atol=tol)


@pytest.mark.parametrize("entry", [e for e in INDEX if not computable(e)], ids=lambda e: e["name"])
def test_other_ops_are_unsupported(entry):
    program, inputs, _ = open_fixture(entry)
    with pytest.raises(UnsupportedError):
        reference.run_program(program, inputs)


def test_fixture_sets_cover_both_cases():
    assert sum(map(computable, INDEX)) >= 10 and not all(map(computable, INDEX))


@pytest.mark.parametrize("a_shape,b_shape", [
    ((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (1, 3, 1)), ((4, 4), (4, 1)), ((2, 3, 4), (4,)),
    ((5,), (3, 1, 5)), ((1,), (2, 2)), ((), (3,))])
def test_add_broadcasts_like_numpy(a_shape, b_shape):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(a_shape).astype(np.float32)
    b = rng.standard_normal(b_shape).astype(np.float32)
    out_shape = np.broadcast_shapes(a_shape, b_shape)
    got = reference.add(reference.from_tensor(a), reference.from_tensor(b), 0.5, out_shape)
    np.testing.assert_allclose(np.array(got).reshape(out_shape),
                               a.astype(np.float64) + 0.5 * b.astype(np.float64), rtol=1e-12)


def test_rms_norm_default_eps_on_zero_rows():
    x = reference.Array((2, 4), [0.0] * 4 + [1.0, -1.0, 1.0, -1.0])
    w = reference.Array((4,), [2.0] * 4)
    out = reference.rms_norm(x, w, reference.F32_EPS)
    assert out[:4] == [0.0] * 4
    assert out[4:] == pytest.approx([2.0, -2.0, 2.0, -2.0], rel=1e-6)


def test_rounds_to_float32_and_overflows_to_inf():
    assert reference.round_to([0.1], Tensor(b"\0" * 4, (1,)).dtype) == [np.float32(0.1).item()]
    assert reference.round_to([1e300, -1e300], Tensor(b"\0" * 4, (1,)).dtype) == \
        [float("inf"), float("-inf")]
