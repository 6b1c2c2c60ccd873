"""How tensors are held on the GPU, and the host conversions that follow from it.

float16 tensors stay float16 (``half``) when the adapter has ``shader-f16`` and
every op that touches them has an f16 kernel (accumulating in f32). Otherwise
they are widened to float32, as on Chromium's SwiftShader adapter, which has no
``shader-f16``; inputs, constants and outputs are then converted at
upload/download. ``inspect`` and ``run`` say which.

bool tensors are held as one u32 per element (0 or 1): WGSL has no 8-bit storage and
`bool` is not host-shareable, so kernels read and write them as ``array<u32>``; host
bytes are widened at upload and narrowed (nonzero -> 1) at download.

int64 tensors are held as int32 (WGSL has no 64-bit integers), as ExecuTorch's
Vulkan backend does (``downcast_64_bit``): host int64 inputs are narrowed at
upload, and a value outside int32's range is an error, not a silent wrap;
int64 outputs are sign-extended at download. int32 tensors are stored as is.
"""

from __future__ import annotations

import struct

from ..errors import InputError
from ..model import dtypes

try:
    import numpy as _np
except ImportError:  # Pyodide offline
    _np = None


class Storage:
    """The storage rule of one program: ``half`` keeps float16 as f16 on the GPU."""

    def __init__(self, half: bool = False):
        self.half = half

    def dtype(self, dtype: dtypes.DType) -> dtypes.DType:
        if dtype is dtypes.FLOAT16 and not self.half:
            return dtypes.FLOAT32
        if dtype is dtypes.INT64:
            return dtypes.INT32
        if dtype is dtypes.BOOL:
            return dtypes.UINT32
        return dtype

    def nbytes(self, value) -> int:
        """Bytes a tensor takes on the GPU (>= 4, a multiple of 4 for WebGPU bindings)."""
        n = value.numel * self.dtype(value.dtype).itemsize
        return max(4, (n + 3) & ~3)

    def to_storage(self, data, dtype: dtypes.DType, what: str = "a tensor",
                   error: type = InputError):
        """Host bytes of ``dtype`` → bytes in the storage dtype. An int64 value beyond
        int32 raises ``error`` naming ``what`` (e.g. "input 0")."""
        if self.dtype(dtype) is dtype:
            return data
        if len(data) % dtype.itemsize:
            raise error(f"{what}: {len(data)} bytes is not a whole number of "
                        f"{dtype.name} elements")
        if dtype is dtypes.INT64:
            return _narrow_int64(data, what, error)
        if dtype is dtypes.BOOL:
            raw = bytes(data)
            if _np is not None:
                return (_np.frombuffer(raw, dtype=_np.uint8) != 0).astype("<u4").tobytes()
            return struct.pack(f"<{len(raw)}I", *(1 if b else 0 for b in raw))
        if _np is not None:
            return _np.frombuffer(data, dtype=_np.float16).astype(_np.float32).tobytes()
        n = len(data) // 2
        return struct.pack(f"<{n}f", *struct.unpack(f"<{n}e", data))

    def from_storage(self, data: bytes, dtype: dtypes.DType) -> bytes:
        """Storage bytes → host bytes of ``dtype`` (f32 → f16 rounds to nearest even)."""
        if self.dtype(dtype) is dtype:
            return data
        if dtype is dtypes.INT64:  # int32 → int64, sign-extended
            if _np is not None:
                return _np.frombuffer(data, dtype="<i4").astype("<i8").tobytes()
            n = len(data) // 4
            return struct.pack(f"<{n}q", *struct.unpack(f"<{n}i", data))
        if dtype is dtypes.BOOL:  # u32 -> one byte, nonzero is True
            if _np is not None:
                return (_np.frombuffer(data, dtype="<u4") != 0).astype(_np.uint8).tobytes()
            n = len(data) // 4
            return bytes(1 if x else 0 for x in struct.unpack(f"<{n}I", data))
        if _np is not None:
            return _np.frombuffer(data, dtype=_np.float32).astype(_np.float16).tobytes()
        return b"".join(_half(x) for x in struct.unpack(f"<{len(data) // 4}f", data))

    def notes(self, values) -> list[str]:
        """What a user should know about how these values are held on the GPU."""
        kinds = {v.dtype for v in values if v.kind == "tensor"}
        notes = []
        if dtypes.FLOAT16 in kinds:
            notes.append("float16 tensors are stored as float16 (shader-f16); kernels "
                         "accumulate in float32" if self.half else
                         "float16 tensors are stored and computed as float32 on the GPU "
                         "(converted at upload/download)")
        if dtypes.INT64 in kinds:
            notes.append("int64 tensors are stored as int32 on the GPU (inputs must fit "
                         "int32)")
        return notes


WIDE = Storage(half=False)  # the rule wherever shader-f16 is missing or not usable


INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


def _narrow_int64(data, what: str, error: type) -> bytes:
    """int64 bytes → int32 bytes; any value outside int32 raises ``error``."""
    if _np is not None:
        wide = _np.frombuffer(data, dtype="<i8")
        bad = wide[(wide < INT32_MIN) | (wide > INT32_MAX)]
        if bad.size:
            _out_of_range(int(bad[0]), what, error)
        return wide.astype("<i4").tobytes()
    n = len(data) // 8
    values = struct.unpack(f"<{n}q", data)
    for v in values:
        if not INT32_MIN <= v <= INT32_MAX:
            _out_of_range(v, what, error)
    return struct.pack(f"<{n}i", *values)


def _out_of_range(value: int, what: str, error: type):
    raise error(f"{what}: int64 value {value} is outside int32's range; the GPU holds "
                "int64 tensors as int32 (WGSL has no 64-bit integers)")


def _half(x: float) -> bytes:
    try:
        return struct.pack("<e", x)
    except OverflowError:  # beyond float16's range: infinity, as a cast would give
        return struct.pack("<e", float("inf") if x > 0 else float("-inf"))
