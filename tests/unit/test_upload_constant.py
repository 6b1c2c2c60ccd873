"""Constants converted at upload (float16 widened, int64 narrowed, bool widened) go to the
GPU a slice at a time: the same bytes as converting the whole tensor, no write (host copy)
larger than one slice; constants held as they are go as one write of the file's memory."""

import numpy as np
import pytest
from pte_webgpu.errors import UnsupportedError
from pte_webgpu.gpu.recording import Buffer
from pte_webgpu.model import dtypes
from pte_webgpu.runtime import build
from pte_webgpu.runtime.state import all_zero
from pte_webgpu.runtime.storage import WIDE, Storage


class RecordingDevice:
    """write_buffer into host memory; the base device's write_f16_as_f32 (not in JS)."""

    def __init__(self, size):
        self.memory = bytearray(size)
        self.writes = []

    def write_buffer(self, buf, data, offset=0):
        data = memoryview(data).cast("B")
        self.memory[offset:offset + len(data)] = data
        self.writes.append((offset, len(data), data.obj))

    def write_f16_as_f32(self, buf, data, offset=0):
        return False


@pytest.mark.parametrize("dtype,values", [
    ("float16", lambda rng, n: rng.standard_normal(n).astype(np.float16)),
    ("int64", lambda rng, n: rng.integers(-2**31, 2**31, n, dtype=np.int64)),
    ("bool", lambda rng, n: rng.integers(0, 2, n).astype(np.bool_)),
])
def test_converted_constants_upload_in_slices(monkeypatch, dtype, values):
    monkeypatch.setattr(build, "UPLOAD_STEP_ELEMENTS", 1000)
    host = values(np.random.default_rng(0), 2501)
    dt = getattr(dtypes, dtype.upper())
    want = WIDE.to_storage(host.tobytes(), dt)
    device = RecordingDevice(len(want) + 4)
    build.upload_constant(device, WIDE, Buffer(None, len(want), "c"), memoryview(host.tobytes()),
                          dt, "constant 0")
    assert bytes(device.memory[:len(want)]) == want
    assert len(device.writes) == 3 and max(n for _, n, _ in device.writes) <= 1000 * 4


def test_constants_held_as_is_are_written_from_the_files_memory():
    file = bytes(range(256)) * 64
    device = RecordingDevice(len(file))
    view = memoryview(file)[256:256 + 4096]
    build.upload_constant(device, Storage(half=True), Buffer(None, 4096, "c"), view,
                          dtypes.FLOAT16, "constant 0")
    (offset, n, obj), = device.writes
    assert (offset, n) == (0, 4096) and obj is file  # a view of the file, not a copy


def test_int64_constant_beyond_int32_names_it():
    data = np.array([1, 2**40], dtype=np.int64).tobytes()
    with pytest.raises(UnsupportedError, match="constant 9"):
        build.upload_constant(RecordingDevice(8), WIDE, Buffer(None, 8, "c"), data,
                              dtypes.INT64, "constant 9")


def test_all_zero_compares_in_slices():
    zeros = bytearray(3 << 20)
    assert all_zero(zeros) and all_zero(b"")
    zeros[-1] = 1
    assert not all_zero(zeros) and not all_zero(memoryview(zeros)[(2 << 20) + 5:])
