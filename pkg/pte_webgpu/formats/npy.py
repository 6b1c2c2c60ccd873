"""NumPy ``.npy`` / ``.npz`` reading and writing without numpy (Pyodide has none offline).

Arrays come back as ``tensor.Tensor``; C order, the dtypes in ``dtypes.BY_NAME``
(big-endian members are byte-swapped to little-endian). Errors are FormatError naming
the member and what was wrong.
"""

from __future__ import annotations

import ast
import io
import struct
import zipfile

from ..errors import FormatError
from ..model import dtypes
from ..model.tensor import Tensor

MAGIC = b"\x93NUMPY"
_DESCR = {"<f4": "float32", "<f2": "float16", "<f8": "float64", "<i4": "int32",
          "<i8": "int64", "|i1": "int8", "|u1": "uint8", "|b1": "bool", "<i2": "int16",
          "<u2": "uint16", "<u4": "uint32", "<u8": "uint64"}
_DESCR_OF = {v: k for k, v in _DESCR.items()}


def read_npy(data, name: str = ".npy"):
    view = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    if bytes(view[:6]) != MAGIC or len(view) < 10:
        raise FormatError(f"{name}: not a .npy file (magic {bytes(view[:6])!r})", offset=0)
    major = view[6]
    if major == 1:
        hlen, start = struct.unpack_from("<H", view, 8)[0], 10
    elif major in (2, 3):
        if len(view) < 12:
            raise FormatError(f"{name}: truncated .npy header", offset=8)
        hlen, start = struct.unpack_from("<I", view, 8)[0], 12
    else:
        raise FormatError(f"{name}: unsupported .npy version {major}", offset=6)
    if start + hlen > len(view):
        raise FormatError(f"{name}: header of {hlen} bytes runs past the end", offset=start)
    try:
        header = ast.literal_eval(bytes(view[start:start + hlen]).decode("latin1"))
        descr, fortran, shape = header["descr"], header["fortran_order"], tuple(header["shape"])
    except (ValueError, SyntaxError, KeyError, TypeError) as e:
        raise FormatError(f"{name}: unreadable .npy header ({e})", offset=start) from None
    little = "<" + descr[1:] if isinstance(descr, str) and descr[:1] == ">" else descr
    if little not in _DESCR:
        raise FormatError(f"{name}: dtype {descr!r} is not supported ("
                          f"{', '.join(sorted(set(_DESCR.values())))}, either byte order)")
    if fortran and len(shape) > 1:
        raise FormatError(f"{name}: Fortran-ordered arrays are not supported")
    dtype = dtypes.BY_NAME[_DESCR[little]]
    nbytes = dtypes.numel(shape) * dtype.itemsize
    body = view[start + hlen:]
    if len(body) < nbytes:
        raise FormatError(f"{name}: shape {list(shape)} needs {nbytes} bytes, the file has "
                          f"{len(body)}")
    if descr != little:  # big-endian: Tensor swaps the bytes
        return Tensor(body[:nbytes], shape, descr)
    return Tensor(body[:nbytes], shape, dtype)


def read_npz(data, name: str = ".npz") -> dict:
    """Members of an .npz archive, by name without the ``.npy`` suffix."""
    try:
        with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
            return {m[:-4] if m.endswith(".npy") else m: read_npy(z.read(m), f"{name}:{m}")
                    for m in z.namelist()}
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as e:
        raise FormatError(f"{name}: not a readable .npz archive ({e})") from None


def write_npy(tensor) -> bytes:
    """``.npy`` bytes (version 1.0) of a Tensor or numpy array."""
    shape = tuple(tensor.shape)
    dtype = tensor.dtype if isinstance(tensor.dtype, dtypes.DType) else \
        dtypes.BY_NAME[str(tensor.dtype)]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (
        _DESCR_OF[dtype.name], shape)
    pad = -(len(MAGIC) + 4 + len(header) + 1) % 64
    header = (header + " " * pad + "\n").encode("latin1")
    return MAGIC + b"\x01\x00" + struct.pack("<H", len(header)) + header + tensor.tobytes()


def write_npz(arrays: dict) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for key, tensor in arrays.items():
            z.writestr(key + ".npy", write_npy(tensor))
    return out.getvalue()
