"""runtime/inputs.py on the host: every input form of tests/input_cases.py reads as
exactly the reference values, or raises InputError saying what was wrong; with numpy
and without it (Pyodide offline)."""

import array
import struct

import numpy as np
import pytest
from pte_webgpu import Tensor
from pte_webgpu.errors import InputError
from pte_webgpu.model import host_buffers
from pte_webgpu.runtime import inputs

from tests.support.input_cases import CONTAINER_CASES, FLOAT_CASES, INT_CASES, PURE_CASES, SHAPE

REF = np.random.default_rng(5).standard_normal(SHAPE).astype(np.float32)
REF.reshape(-1)[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]  # bit-exact, NaN included
IDS = np.random.default_rng(6).integers(0, 100, (2, 5)).astype(np.int64)
FLOAT_SPECS = [(SHAPE, "float32"), (SHAPE, "float32")]


def _read(x, specs):
    return inputs.read_inputs([x] + [np.ones(s, d) for s, d in specs[1:]], specs, "forward")[0]


def _check(make, expect, ref, specs):
    if expect == "ok":
        t = _read(make(ref), specs)
        assert t.shape == ref.shape and t.dtype.name == ref.dtype.name
        assert t.tobytes() == ref.astype(ref.dtype.newbyteorder("<")).tobytes()
    else:
        with pytest.raises(InputError, match=expect):
            _read(make(ref), specs)


@pytest.mark.parametrize("case", FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_float_input_forms(case):
    _check(case[1], case[2], REF, FLOAT_SPECS)


# list_beyond_int32: narrowing to int32 is storage's (tests/native/test_inputs.py runs it)
HOST_INT_CASES = [c for c in INT_CASES if c[0] != "list_beyond_int32"]


@pytest.mark.parametrize("case", HOST_INT_CASES, ids=[c[0] for c in HOST_INT_CASES])
def test_int64_input_forms(case):
    _check(case[1], case[2], IDS, [((2, 5), "int64")])


@pytest.mark.parametrize("case", CONTAINER_CASES, ids=[c[0] for c in CONTAINER_CASES])
def test_the_inputs_container(case):
    with pytest.raises(InputError, match=case[2]):
        inputs.read_inputs(case[1](REF), FLOAT_SPECS, "forward")


@pytest.mark.parametrize("case", PURE_CASES, ids=[c[0] for c in PURE_CASES])
def test_numpy_free_forms(case, monkeypatch):
    """The forms the browser tests send, read here with numpy hidden as in Pyodide."""
    monkeypatch.setattr(inputs, "_np", None)
    monkeypatch.setattr(host_buffers, "_np", None)
    ref = [float(v) for v in REF.reshape(-1)]
    x = eval(case[1], {"struct": struct, "array": array, "Tensor": Tensor, "ref": ref})
    if case[2] == "ok":
        t = inputs.read_inputs([x, (bytes(96), SHAPE)], FLOAT_SPECS, "forward")[0]
        assert t.shape == SHAPE and t.tobytes() == REF.tobytes()
    else:
        with pytest.raises(InputError, match=case[2]):
            inputs.read_inputs([x, (bytes(96), SHAPE)], FLOAT_SPECS, "forward")


def test_zero_dim_inputs_keep_their_shape():
    for x in (np.float32(2.5), np.array(2.5, ">f4"), 2.5, (struct.pack("<f", 2.5), ())):
        t = inputs.read_input(x, 0)
        assert t.shape == () and t.tobytes() == struct.pack("<f", 2.5)


def test_list_values_beyond_float32_become_inf_as_torch_casts_them():
    t = inputs.read_input([1e39, -1e308, 3.4028235e38, 1e-50], 0)
    assert struct.unpack("<4f", t.tobytes()) == (np.inf, -np.inf, 3.4028234663852886e38, 0.0)
    t = inputs.read_input([70000.0], 0, "float16")
    assert struct.unpack("<e", t.tobytes()) == (np.inf,)


def test_large_contiguous_inputs_are_not_copied():
    """Contiguous little-endian buffers are handed on as views (the browser writes big
    inputs straight from the wasm heap)."""
    data = bytearray(4 * 1000)
    t = inputs.read_input((data, (1000,)), 0)
    data[0:4] = struct.pack("<f", 7.0)
    assert struct.unpack_from("<f", t.tobytes())[0] == 7.0


def test_tensor_constructor_refuses_like_execute():
    with pytest.raises(InputError, match=r"Tensor: dtype 'complex64' is not supported"):
        Tensor(bytes(8), (1,), "complex64")
    with pytest.raises(InputError, match=r"Tensor: shape \('a', 2\) has a dimension 'a'"):
        Tensor(bytes(8), ("a", 2))
    t = Tensor(struct.pack(">2f", 1.5, -2.0), (2,), ">f4")
    assert t.tolist() == [1.5, -2.0] and t.dtype.name == "float32"


@pytest.mark.parametrize("order", ["<", ">"])
def test_npz_members_of_either_byte_order_read_as_their_values(order, monkeypatch):
    """`pte-webgpu run --inputs x.npz` and the web page read .npz without numpy: a
    big-endian member is swapped, not misread."""
    import io

    from pte_webgpu.formats import npy

    buf = io.BytesIO()
    np.savez(buf, x=REF.astype(order + "f4"), ids=IDS.astype(order + "i8"))
    monkeypatch.setattr(inputs, "_np", None)
    monkeypatch.setattr(host_buffers, "_np", None)
    members = npy.read_npz(buf.getvalue())
    assert members["x"].tobytes() == REF.tobytes() and members["x"].shape == SHAPE
    assert members["ids"].tobytes() == IDS.tobytes() and members["ids"].dtype.name == "int64"
