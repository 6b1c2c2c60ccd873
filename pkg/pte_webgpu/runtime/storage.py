"""How tensors are held on the GPU, and the host conversions that follows from it.

float16 tensors are stored as float32: Chromium's SwiftShader adapter has no
``shader-f16``, and f32 storage keeps one kernel per op. Inputs, constants and
outputs are converted at upload/download (``inspect``/``run`` say so).
"""

from __future__ import annotations

import struct

from .. import dtypes

try:
    import numpy as _np
except ImportError:  # Pyodide offline
    _np = None

WIDENED = {dtypes.FLOAT16: dtypes.FLOAT32}


def storage_notes(values) -> list[str]:
    """What a user should know about how these graph/plan values are held on the GPU."""
    if any(getattr(v, "dtype", None) in WIDENED for v in values if v.kind == "tensor"):
        return ["float16 tensors are stored and computed as float32 on the GPU "
                "(converted at upload/download)"]
    return []


def storage_dtype(dtype: dtypes.DType) -> dtypes.DType:
    return WIDENED.get(dtype, dtype)


def storage_nbytes(value) -> int:
    """Bytes a TensorValue takes on the GPU (>= 4, a multiple of 4 for WebGPU bindings)."""
    n = value.numel * storage_dtype(value.dtype).itemsize
    return max(4, (n + 3) & ~3)


def to_storage(data, dtype: dtypes.DType):
    """Host bytes of ``dtype`` → bytes in the storage dtype."""
    if dtype is not dtypes.FLOAT16:
        return data
    if _np is not None:
        return _np.frombuffer(data, dtype=_np.float16).astype(_np.float32).tobytes()
    n = len(data) // 2
    return struct.pack(f"<{n}f", *struct.unpack(f"<{n}e", data))


def from_storage(data: bytes, dtype: dtypes.DType) -> bytes:
    """Storage bytes → host bytes of ``dtype`` (float32 → float16 rounds to nearest even)."""
    if dtype is not dtypes.FLOAT16:
        return data
    if _np is not None:
        return _np.frombuffer(data, dtype=_np.float32).astype(_np.float16).tobytes()
    return b"".join(_half(x) for x in struct.unpack(f"<{len(data) // 4}f", data))


def _half(x: float) -> bytes:
    try:
        return struct.pack("<e", x)
    except OverflowError:  # beyond float16's range: infinity, as a cast would give
        return struct.pack("<e", float("inf") if x > 0 else float("-inf"))
