"""Host buffers: shapes, dtypes and bytes read from Python objects, with their byte
order and strides honoured, or an ``InputError`` naming where (``where``) and what was
wrong. Used by ``Tensor`` and by the input reader (inputs.py)."""

from __future__ import annotations

import array
import math
import operator
import struct
import sys

from ..errors import InputError
from . import dtypes
from .f32 import FLOAT_PACKERS

try:  # numpy is optional (absent in an offline Pyodide)
    import numpy as _np
except ImportError:  # pragma: no cover - exercised in the browser tests
    _np = None

LITTLE = sys.byteorder == "little"
# buffer-protocol item codes by kind; the size comes from the view's itemsize
_FLOAT_CODES, _INT_CODES, _UINT_CODES = "efd", "bhilqn", "BHILQN"
_BYTE_CODES = ("B", "c")  # untyped bytes unless the buffer is an array.array('B')
_SWAP_CODES = {2: "H", 4: "I", 8: "Q"}  # array codes to swap items of 2, 4, 8 bytes
_NUMPY_CODES = {"f": "float", "i": "int", "u": "uint", "b": "bool"}


# --- shapes and dtypes -------------------------------------------------------------------
def read_shape(shape, where: str) -> tuple[int, ...]:
    """A shape: a tuple or list of non-negative ints."""
    if not isinstance(shape, (tuple, list)):
        raise InputError(f"{where}: shape should be a tuple of ints, got {kind(shape)}")
    out = []
    for d in shape:
        try:
            if isinstance(d, bool):
                raise TypeError
            n = operator.index(d)
        except TypeError:
            raise InputError(f"{where}: shape {show(shape)} has a dimension {d!r} that is not "
                             "an int") from None
        if n < 0:
            raise InputError(f"{where}: shape {show(shape)} has a negative dimension {n}")
        out.append(n)
    return tuple(out)


def read_dtype(dtype, where: str) -> tuple[dtypes.DType, bool]:
    """(dtype, big-endian) from a DType, a name ("float32"), a numpy-style string with a
    byte order (">f4", "<i8") or a numpy dtype."""
    if isinstance(dtype, dtypes.DType):
        return dtype, False
    if _np is not None and not isinstance(dtype, str):
        try:
            np_dtype = _np.dtype(dtype)
        except Exception:  # numpy refuses it: so do we, below
            np_dtype = None
        if np_dtype is not None and np_dtype.name in dtypes.BY_NAME and not np_dtype.fields:
            return dtypes.BY_NAME[np_dtype.name], _big(np_dtype.byteorder)
    if isinstance(dtype, str):
        order, body = (dtype[0], dtype[1:]) if dtype[:1] in "<>=|!" else ("=", dtype)
        name = body if body in dtypes.BY_NAME else _numpy_code(body)
        if name in dtypes.BY_NAME and dtypes.BY_NAME[name].struct_code:
            return dtypes.BY_NAME[name], _big(order)
    raise InputError(f"{where}: dtype {dtype!r} is not supported; use one of "
                     + ", ".join(n for n, d in dtypes.BY_NAME.items() if d.struct_code))


def _numpy_code(body: str) -> str | None:
    """"f4" -> "float32", "i8" -> "int64", "b1" -> "bool"."""
    if len(body) >= 2 and body[0] in _NUMPY_CODES and body[1:].isdigit():
        kind, size = _NUMPY_CODES[body[0]], int(body[1:])
        return "bool" if kind == "bool" and size == 1 else f"{kind}{8 * size}"
    return None


def _big(order: str) -> bool:
    return order in (">", "!") or (order == "=" and not LITTLE)


# --- buffers -------------------------------------------------------------------------------
def buffer_bytes(buf, shape, dtype, default_dtype, where: str):
    """(little-endian C-order bytes, (DType, False)) of ``buf`` holding ``shape``'s
    elements. ``dtype``: (DType, big-endian) given by the caller, or None."""
    numel = dtypes.numel(shape)
    if isinstance(buf, list):
        want = dtype[0] if dtype else dtypes.BY_NAME[default_dtype or "float32"]
        _, flat = nested(buf, where)
        if len(flat) != numel:
            raise InputError(f"{where}: the list has {len(flat)} values, shape {list(shape)} "
                             f"needs {numel}")
        return pack_values(flat, want, where), (want, False)
    if _masked(buf):
        buf = _unmasked(buf, where)
    try:
        view = memoryview(buf)
    except TypeError:
        raise InputError(f"{where}: the buffer is {kind(buf)}, which has no buffer protocol; "
                         f"expected bytes, a memoryview, an array.array or a numpy array") \
            from None
    typed = _view_dtype(view, buf, where)
    if typed is None:  # untyped bytes: the caller's dtype, else the program's
        item, big = dtype if dtype else (dtypes.BY_NAME[default_dtype or "uint8"], False)
    else:
        item, big = typed
        if dtype and dtype[0] is not item:
            raise InputError(f"{where}: the buffer holds {item.name} items (format "
                             f"{view.format!r}) but the dtype given is {dtype[0].name}")
    data = _contiguous_bytes(view)
    if len(data) != numel * item.itemsize:
        raise InputError(f"{where}: a {item.name} tensor of shape {list(shape)} needs "
                         f"{numel * item.itemsize} bytes, the buffer has {len(data)}")
    if big and item.itemsize > 1:
        data = _swap(data, item.itemsize)
    return data, (item, False)


def _view_dtype(view: memoryview, buf, where: str):
    """(DType, big-endian) of a typed buffer, or None for untyped bytes."""
    fmt = view.format
    order, code = (fmt[0], fmt[1:]) if fmt[:1] in "@=<>!" else ("@", fmt)
    if code in _BYTE_CODES and not isinstance(buf, array.array):
        return None
    size = view.itemsize
    if len(code) != 1:
        name = None
    elif code in _FLOAT_CODES:
        name = f"float{8 * size}"
    elif code in _INT_CODES:
        name = f"int{8 * size}"
    elif code in _UINT_CODES:
        name = f"uint{8 * size}"
    else:
        name = "bool" if code == "?" else None
    if name not in dtypes.BY_NAME:
        raise InputError(f"{where}: buffer format {fmt!r} is not supported")
    return dtypes.BY_NAME[name], _big("=" if order == "@" else order)


def _contiguous_bytes(view: memoryview):
    """The view's items in C order as a flat byte view (a copy only when strided)."""
    if view.c_contiguous:
        return view.cast("B") if view.ndim != 1 or view.format != "B" else view
    return memoryview(view.tobytes(order="C"))


def _swap(data, itemsize: int) -> memoryview:
    """Byte-swap every item (big-endian -> little-endian)."""
    items = array.array(_SWAP_CODES[itemsize])
    items.frombytes(data)
    items.byteswap()
    return memoryview(items).cast("B")


def pack_values(values, dtype: dtypes.DType, where: str) -> bytes:
    """Python numbers -> little-endian bytes of ``dtype``, as torch.tensor(values, dtype)
    converts them: floats beyond a float dtype's range become +-inf; an int dtype refuses
    fractions, NaN and values beyond its range."""
    if dtype.name in FLOAT_PACKERS:
        pack = FLOAT_PACKERS[dtype.name]
        out = bytearray()
        for i, v in enumerate(values):
            if not isinstance(v, (int, float)):
                raise InputError(f"{where}: value {v!r} at flat position {i} is not a number")
            out += pack(float(v))
        return bytes(out)
    if dtype.name == "bool" or dtype.name.startswith(("int", "uint")):
        bits = 8 * dtype.itemsize
        low, high = (0, 1) if dtype.name == "bool" else \
            ((0, (1 << bits) - 1) if dtype.name.startswith("u") else
             (-(1 << (bits - 1)), (1 << (bits - 1)) - 1))
        ints = []
        for i, v in enumerate(values):
            if isinstance(v, float) and (not math.isfinite(v) or v != int(v)):
                raise InputError(f"{where}: value {v!r} at flat position {i} is not an integer "
                                 f"({dtype.name} input)")
            if not isinstance(v, (int, float)) or not low <= int(v) <= high:
                raise InputError(f"{where}: value {v!r} at flat position {i} does not fit "
                                 f"{dtype.name}")
            ints.append(int(v))
        return struct.pack(f"<{len(ints)}{dtype.struct_code}", *ints)
    raise InputError(f"{where}: lists of numbers cannot make a {dtype.name} tensor")


def nested(x, where: str) -> tuple[tuple[int, ...], list]:
    """(shape, flat values) of a nested list of numbers; ragged lists are refused."""
    if not isinstance(x, list):
        return (), [x]
    shape, level = [], [x]
    while level and all(isinstance(v, list) for v in level):
        lengths = {len(v) for v in level}
        if len(lengths) != 1:
            raise InputError(f"{where}: the nested list is ragged (lengths {sorted(lengths)} at "
                             f"depth {len(shape)})")
        shape.append(lengths.pop())
        level = [item for v in level for item in v]
    if any(isinstance(v, list) for v in level):
        raise InputError(f"{where}: the nested list mixes lists and numbers at depth "
                         f"{len(shape)}")
    return tuple(shape), level


# --- numpy -----------------------------------------------------------------------------------
def is_numpy(x) -> bool:
    return isinstance(x, (_np.ndarray, _np.generic))


def _masked(x) -> bool:
    # only once numpy.ma is loaded can x be one (numpy imports it lazily: ~15-30 ms)
    return _np is not None and "numpy.ma" in sys.modules and _np.ma.isMaskedArray(x)


def _unmasked(x, where: str):
    masked = int(_np.ma.getmaskarray(x).sum())
    if masked:
        raise InputError(f"{where}: a masked array with {masked} masked element(s); fill them "
                         "first (x.filled(value)), the GPU has no mask")
    return _np.ma.getdata(x)


def numpy_bytes(x, where: str):
    """(little-endian C-order bytes, shape, dtype name) of a numpy array or scalar."""
    if _masked(x):
        x = _unmasked(x, where)
    x = _np.asarray(x)  # drops subclasses (matrix, memmap) that reshape differently
    if x.dtype.fields is not None or x.dtype.subdtype is not None or \
            x.dtype.name not in dtypes.BY_NAME or not dtypes.BY_NAME[x.dtype.name].struct_code:
        raise InputError(f"{where}: numpy dtype {x.dtype} is not supported")
    little = x.dtype.newbyteorder("<")
    if x.dtype != little or not x.flags.c_contiguous:
        x = x.astype(little, order="C")  # swaps bytes and/or gathers strides; keeps 0-d
    return x.reshape(-1).view(_np.uint8).data, x.shape, x.dtype.name


# --- messages --------------------------------------------------------------------------------
def kind(x) -> str:
    if x is None:
        return "None"
    kind = type(x)
    return f"a {kind.__name__}" if kind.__module__ == "builtins" else \
        f"a {kind.__module__}.{kind.__qualname__}"


def show(shape) -> str:
    text = repr(shape)
    return text if len(text) <= 80 else text[:77] + "..."
