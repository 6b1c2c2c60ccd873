"""Host tensors: numpy arrays when numpy is importable, a small Tensor type otherwise.

Pyodide offline has no numpy, so nothing here requires it.
"""

from __future__ import annotations

import struct

from .. import dtypes
from ..errors import InputError

try:  # numpy is optional (absent in an offline Pyodide)
    import numpy as _np
except ImportError:  # pragma: no cover - exercised in the browser tests
    _np = None


class Tensor:
    """A dense, C-contiguous host tensor: ``shape``, ``dtype``, ``tobytes()``, ``tolist()``."""

    __slots__ = ("_data", "shape", "dtype")

    def __init__(self, data, shape, dtype="float32"):
        self.dtype = dtype if isinstance(dtype, dtypes.DType) else dtypes.BY_NAME[str(dtype)]
        self.shape = tuple(int(d) for d in shape)
        view = memoryview(data).cast("B") if not isinstance(data, memoryview) or \
            data.format != "B" or data.ndim != 1 else data
        need = dtypes.numel(self.shape) * self.dtype.itemsize
        if len(view) != need:
            raise InputError(f"a {self.dtype.name} tensor of shape {list(self.shape)} needs "
                             f"{need} bytes, the buffer has {len(view)}")
        self._data = view

    @property
    def nbytes(self) -> int:
        return len(self._data)

    def tobytes(self) -> bytes:
        return bytes(self._data)

    def memoryview(self) -> memoryview:
        return self._data

    def tolist(self):
        flat = list(struct.unpack(f"<{dtypes.numel(self.shape)}{self.dtype.struct_code}",
                                  self._data))
        for d in reversed(self.shape[1:]):
            flat = [flat[i:i + d] for i in range(0, len(flat), d)]
        return flat if self.shape else flat[0]

    def numpy(self):
        if _np is None:
            raise ImportError("numpy is not installed")
        return _np.frombuffer(self._data, dtype=self.dtype.name).reshape(self.shape).copy()

    def __repr__(self) -> str:
        return f"Tensor(shape={list(self.shape)}, dtype={self.dtype.name})"


def to_host_tensor(x, index: int, default_dtype: str = "float32") -> Tensor:
    """Accept a numpy array, a Tensor, a (buffer, shape[, dtype]) tuple or a shaped memoryview."""
    if isinstance(x, Tensor):
        return x
    if _np is not None and isinstance(x, _np.ndarray):
        # ascontiguousarray would turn a 0-d array into shape (1,): copy only when needed
        arr = x if x.flags.c_contiguous else _np.ascontiguousarray(x)
        if arr.dtype.name not in dtypes.BY_NAME:
            raise InputError(f"input {index}: numpy dtype {arr.dtype} is not supported")
        return Tensor(arr.reshape(-1).view(_np.uint8), arr.shape, arr.dtype.name)
    if isinstance(x, tuple) and len(x) in (2, 3):
        dtype = x[2] if len(x) == 3 else _buffer_dtype(x[0], index, default_dtype)
        return Tensor(x[0], x[1], dtype)
    if isinstance(x, memoryview) and x.ndim >= 1 and x.format in _FORMATS:
        return Tensor(x, x.shape, _FORMATS[x.format])
    raise InputError(f"input {index}: expected a numpy array, a pte_webgpu.Tensor, or a "
                     f"(buffer, shape) tuple; got {type(x).__name__}")


_FORMATS = {"f": "float32", "e": "float16", "d": "float64", "i": "int32", "q": "int64",
            # C long is 8 bytes on 64-bit Linux/macOS, 4 in wasm32 (Pyodide) and on Windows
            "l": "int64" if struct.calcsize("l") == 8 else "int32",
            "b": "int8", "B": "uint8", "?": "bool", "h": "int16"}


def _buffer_dtype(buf, index: int, default: str) -> str:
    fmt = getattr(buf, "typecode", None) or memoryview(buf).format
    if fmt == "B" and not hasattr(buf, "typecode"):
        return default  # untyped bytes: take the dtype the program expects
    if fmt not in _FORMATS:
        raise InputError(f"input {index}: buffer format {fmt!r} is not supported")
    return _FORMATS[fmt]


def output(data: bytes, shape, dtype: dtypes.DType, as_numpy: bool):
    t = Tensor(data, shape, dtype)
    return t.numpy() if as_numpy and _np is not None else t


def numpy_available() -> bool:
    return _np is not None
