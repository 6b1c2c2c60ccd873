"""How tensors are held on the GPU, and the host conversions that follow from it.

float16 tensors stay float16 (``half``) when the adapter has ``shader-f16`` and
every op that touches them has an f16 kernel (accumulating in f32). Otherwise
they are widened to float32, as on Chromium's SwiftShader adapter, which has no
``shader-f16``; inputs, constants and outputs are then converted at
upload/download. ``inspect`` and ``run`` say which.
"""

from __future__ import annotations

import struct

from .. import dtypes

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
        return dtype

    def nbytes(self, value) -> int:
        """Bytes a tensor takes on the GPU (>= 4, a multiple of 4 for WebGPU bindings)."""
        n = value.numel * self.dtype(value.dtype).itemsize
        return max(4, (n + 3) & ~3)

    def to_storage(self, data, dtype: dtypes.DType):
        """Host bytes of ``dtype`` → bytes in the storage dtype."""
        if self.dtype(dtype) is dtype:
            return data
        if _np is not None:
            return _np.frombuffer(data, dtype=_np.float16).astype(_np.float32).tobytes()
        n = len(data) // 2
        return struct.pack(f"<{n}f", *struct.unpack(f"<{n}e", data))

    def from_storage(self, data: bytes, dtype: dtypes.DType) -> bytes:
        """Storage bytes → host bytes of ``dtype`` (f32 → f16 rounds to nearest even)."""
        if self.dtype(dtype) is dtype:
            return data
        if _np is not None:
            return _np.frombuffer(data, dtype=_np.float32).astype(_np.float16).tobytes()
        return b"".join(_half(x) for x in struct.unpack(f"<{len(data) // 4}f", data))

    def notes(self, values) -> list[str]:
        """What a user should know about how these values are held on the GPU."""
        if not any(v.kind == "tensor" and v.dtype is dtypes.FLOAT16 for v in values):
            return []
        if self.half:
            return ["float16 tensors are stored as float16 (shader-f16); kernels "
                    "accumulate in float32"]
        return ["float16 tensors are stored and computed as float32 on the GPU "
                "(converted at upload/download)"]


WIDE = Storage(half=False)  # the rule wherever shader-f16 is missing or not usable


def _half(x: float) -> bytes:
    try:
        return struct.pack("<e", x)
    except OverflowError:  # beyond float16's range: infinity, as a cast would give
        return struct.pack("<e", float("inf") if x > 0 else float("-inf"))
