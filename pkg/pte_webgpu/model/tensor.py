"""Host tensors: numpy arrays when numpy is importable, a small Tensor type otherwise.

Pyodide offline has no numpy, so nothing here requires it.
"""

from __future__ import annotations

import struct

from ..errors import InputError
from . import dtypes
from .host_buffers import buffer_bytes, read_dtype, read_shape

try:  # numpy is optional (absent in an offline Pyodide)
    import numpy as _np
except ImportError:  # pragma: no cover - exercised in the browser tests
    _np = None


class Tensor:
    """A dense, C-contiguous host tensor: ``shape``, ``dtype``, ``tobytes()``, ``tolist()``."""

    __slots__ = ("_data", "shape", "dtype")

    def __init__(self, data, shape, dtype="float32"):
        """``data``: little-endian bytes (or any buffer: a typed one gives its own dtype
        and byte order, strides are read in C order), ``shape``, ``dtype`` (a name such
        as "float32", ">f4" for big-endian bytes, or a DType). Bad ones: InputError."""
        self.shape = read_shape(shape, "Tensor")
        if isinstance(data, (bytes, bytearray)) and isinstance(dtype, dtypes.DType):
            self.dtype, view = dtype, memoryview(data)  # outputs and checked inputs
            need = dtypes.numel(self.shape) * dtype.itemsize
            if len(view) != need:
                raise InputError(f"a {dtype.name} tensor of shape {list(self.shape)} needs "
                                 f"{need} bytes, the buffer has {len(view)}")
        else:
            view, (self.dtype, _) = buffer_bytes(data, self.shape, read_dtype(dtype, "Tensor"),
                                                 None, "Tensor")
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


def output(data: bytes, shape, dtype: dtypes.DType, as_numpy: bool):
    t = Tensor(data, shape, dtype)
    return t.numpy() if as_numpy and _np is not None else t


def numpy_available() -> bool:
    return _np is not None
