"""runtime/storage.py: how dtypes live on the GPU, and the host conversions, with and
without numpy (Pyodide offline has none)."""

import struct
from array import array

import numpy as np
import pytest
from pte_webgpu.errors import InputError, UnsupportedError
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import TensorValue
from pte_webgpu.runtime import inputs, storage
from pte_webgpu.runtime.storage import WIDE, Storage


@pytest.fixture(params=["numpy", "pure"])
def numpy_or_not(request, monkeypatch):
    if request.param == "pure":
        monkeypatch.setattr(storage, "_np", None)
    return request.param


@pytest.mark.parametrize("half", [False, True])
def test_storage_dtypes(half):
    s = Storage(half)
    assert s.dtype(dtypes.INT64) is dtypes.INT32
    assert s.dtype(dtypes.INT32) is dtypes.INT32
    assert s.dtype(dtypes.FLOAT16) is (dtypes.FLOAT16 if half else dtypes.FLOAT32)
    assert s.nbytes(TensorValue(dtypes.INT64, (3, 5))) == 60
    assert s.nbytes(TensorValue(dtypes.INT64, (0,))) == 4


def test_int64_narrows_and_widens(numpy_or_not):
    values = [0, 1, -1, 2 ** 31 - 1, -2 ** 31, 12345]
    wide = struct.pack(f"<{len(values)}q", *values)
    narrow = WIDE.to_storage(wide, dtypes.INT64, "input 0")
    assert narrow == struct.pack(f"<{len(values)}i", *values)
    assert WIDE.from_storage(narrow, dtypes.INT64) == wide
    assert WIDE.to_storage(memoryview(wide), dtypes.INT64) == narrow  # what execute passes
    assert WIDE.to_storage(b"", dtypes.INT64) == b"" and WIDE.from_storage(b"", dtypes.INT64) == b""


def test_int32_is_stored_as_is(numpy_or_not):
    data = struct.pack("<3i", 1, -2, 3)
    assert WIDE.to_storage(data, dtypes.INT32) is data
    assert WIDE.from_storage(data, dtypes.INT32) is data


@pytest.mark.parametrize("bad", [2 ** 31, -2 ** 31 - 1, 2 ** 62])
def test_int64_beyond_int32_raises_naming_the_input(numpy_or_not, bad):
    wide = struct.pack("<3q", 1, bad, 2)
    with pytest.raises(InputError, match=rf"input 2: int64 value {bad} is outside int32"):
        WIDE.to_storage(wide, dtypes.INT64, "input 2")
    with pytest.raises(UnsupportedError, match="constant value 7"):
        WIDE.to_storage(wide, dtypes.INT64, "constant value 7", UnsupportedError)


def test_notes_name_int64_storage():
    notes = WIDE.notes([TensorValue(dtypes.INT64, (2,)), TensorValue(dtypes.FLOAT32, (2,))])
    assert notes == ["int64 tensors are stored as int32 on the GPU (inputs must fit int32)"]
    assert WIDE.notes([TensorValue(dtypes.INT32, (2,))]) == []


def test_host_tensors_of_int64_in_every_form():
    ids = np.arange(6, dtype=np.int64).reshape(2, 3)
    for x in (ids, (ids.tobytes(), (2, 3)), (array("q", range(6)), (2, 3)),
              memoryview(ids)):
        t = inputs.read_input(x, 0, "int64")
        assert t.dtype.name == "int64" and t.shape == (2, 3) and t.tobytes() == ids.tobytes()
    t = inputs.read_input((array("i", range(6)), (2, 3)), 0, "int64")
    assert t.dtype.name == "int32"  # typed buffers keep their own dtype (execute refuses it)
    assert inputs.read_input((array("l", range(6)), (6,)), 0).dtype.itemsize == \
        array("l").itemsize  # C long: 8 bytes here, 4 in wasm32
