"""Reading the inputs given to ``Method.execute`` into dense little-endian bytes.

Every accepted form is read with its byte order and strides honoured; anything else
is an ``InputError`` that names the input and what was wrong. Accepted forms:

- a numpy array (any byte order or strides, 0-d too; a masked array only when
  nothing is masked), a numpy scalar, or an object numpy can read (``__array__``);
- a ``pte_webgpu.Tensor``;
- ``(buffer, shape)`` or ``(buffer, shape, dtype)``: the buffer is anything with the
  buffer protocol (bytes, bytearray, memoryview, array.array, numpy) or a list of
  numbers; a typed buffer (memoryview or array format) gives its dtype and byte order,
  untyped bytes take ``dtype`` or the program's dtype, little-endian unless ``dtype``
  says ``">f4"``; non-contiguous memoryviews are read in logical (C) order;
- a typed memoryview or an ``array.array`` alone (its own shape);
- a (nested) list of numbers, or a Python number for a 0-d input, in the program's
  dtype (as ``torch.tensor(values, dtype=...)``: floats beyond the range become inf).

``bind`` reads a method's inputs against its plan for ``Method.execute``: dtypes and
shapes checked (a dynamic input within its bound, padded to it), each in storage bytes,
and the inputs the GPU fills (``readout.LastArgmax``) noted.
"""

from __future__ import annotations

import array
from dataclasses import dataclass, field

from ..errors import InputError
from ..model import dtypes
from ..model.host_buffers import (
    buffer_bytes,
    is_numpy,
    kind,
    nested,
    numpy_bytes,
    pack_values,
    read_dtype,
    read_shape,
)
from ..model.tensor import Tensor
from . import dynamic
from .readout import LastArgmax, fed_shape

try:  # numpy is optional (absent in an offline Pyodide)
    import numpy as _np
except ImportError:  # pragma: no cover - exercised in the browser tests
    _np = None

FORMS = ("a numpy array, a pte_webgpu.Tensor, a (buffer, shape[, dtype]) tuple, a typed "
         "memoryview or array.array, or a list of numbers")


def read_inputs(inputs, specs, method: str) -> list:
    """``inputs`` (a list or tuple) checked against ``specs`` [(shape, dtype name)]:
    one dense ``Tensor`` per input, or ``InputError``."""
    inputs = read_list(inputs, len(specs), method)
    out = []
    for i, (x, (shape, dtype)) in enumerate(zip(inputs, specs)):
        t = read_input(x, i, dtype)
        if t.dtype.name != dtype:
            raise InputError(f"input {i}: expected dtype {dtype}, got {t.dtype.name}")
        if t.shape != tuple(shape):
            raise InputError(f"input {i}: expected shape {list(shape)}, got {list(t.shape)}")
        out.append(t)
    return out


def read_list(inputs, count: int, method: str) -> list:
    """The inputs container: a list or tuple of ``count`` items, else InputError."""
    if not isinstance(inputs, (list, tuple)):
        raise InputError(f"method {method!r} takes its {count} inputs as a list or tuple, "
                         f"got {kind(inputs)}")
    if len(inputs) != count:
        raise InputError(f"method {method!r} takes {count} inputs, got {len(inputs)}")
    return list(inputs)


def read_input(x, index: int, default_dtype: str = "float32"):
    """One input as a dense little-endian ``Tensor``; ``default_dtype`` types untyped
    bytes and lists."""
    where = f"input {index}"
    if isinstance(x, Tensor):
        return x
    if x is None:
        raise InputError(f"{where} is None; expected {FORMS}")
    if _np is not None and is_numpy(x):
        data, shape, dtype = numpy_bytes(x, where)
        return Tensor(data, shape, dtype)
    if isinstance(x, tuple):
        if len(x) not in (2, 3):
            raise InputError(f"{where}: a tuple input is (buffer, shape) or (buffer, shape, "
                             f"dtype), got a tuple of {len(x)} items")
        shape = read_shape(x[1], where)
        dtype = read_dtype(x[2], where) if len(x) == 3 else None
        data, dtype = buffer_bytes(x[0], shape, dtype, default_dtype, where)
        return Tensor(data, shape, dtype[0])
    if isinstance(x, (list, bool, int, float)):
        shape, flat = nested(x, where)
        dtype = dtypes.BY_NAME[default_dtype]
        return Tensor(pack_values(flat, dtype, where), shape, dtype)
    if isinstance(x, (memoryview, array.array)):
        view = memoryview(x)
        data, dtype = buffer_bytes(view, view.shape, None, None, where)
        return Tensor(data, view.shape, dtype[0])
    if _np is not None and (hasattr(x, "__array__") or hasattr(x, "__array_interface__")):
        try:
            arr = _np.asarray(x)
        except Exception as e:  # a foreign array type: whatever it raises, name it
            raise InputError(f"{where}: could not read {kind(x)} as an array: {e}") from None
        data, shape, dtype = numpy_bytes(arr, where)
        return Tensor(data, shape, dtype)
    raise InputError(f"{where}: expected {FORMS}; got {kind(x)}")


@dataclass
class Bound:
    """One execute's inputs, read and checked (``bind``)."""

    uploads: list = field(default_factory=list)  # (plan value, storage bytes) to write
    shapes: dict = field(default_factory=dict)  # ("shape", -1, vid): a dynamic input's shape
    host_inputs: dict = field(default_factory=dict)  # vid: Tensor, for the host steps
    id_data: list = field(default_factory=list)  # unpadded storage bytes (None: fed on
    id_shapes: list = field(default_factory=list)  # the GPU) and shape, per input: id checks
    feeds: list = field(default_factory=list)  # plan values a LastArgmax input fills


def bind(inputs, plan, storage, env, method: str, argmax: bool) -> Bound:
    """``inputs`` against ``plan``'s inputs (``storage``: how they are held; ``env``: the
    method's DynamicEnv, which says which shapes may vary); LastArgmax inputs only with
    ``argmax``. InputError naming the input on any mismatch."""
    inputs = read_list(inputs, len(plan.inputs), method)
    bound = Bound()
    for i, (x, vid) in enumerate(zip(inputs, plan.inputs)):
        want = plan.values[vid]
        if isinstance(x, LastArgmax):
            shape = fed_shape(x, i, want, argmax, env.is_dynamic(-1, vid))
            bound.feeds.append(vid)
            bound.id_data.append(None)
            bound.id_shapes.append(shape)
            if env.is_dynamic(-1, vid):
                dynamic.check_dynamic_shape(shape, want.sizes, i)
                bound.shapes[("shape", -1, vid)] = shape
            bound.host_inputs[vid] = _FedOnGpu(i)
            continue
        t = read_input(x, i, want.dtype.name)
        if t.dtype.name != want.dtype.name:
            raise InputError(f"input {i}: expected dtype {want.dtype.name}, got "
                             f"{t.dtype.name}")
        data = storage.to_storage(t.memoryview(), t.dtype, f"input {i}")
        bound.id_data.append(data)
        bound.id_shapes.append(t.shape)
        if env.is_dynamic(-1, vid):
            dynamic.check_dynamic_shape(t.shape, want.sizes, i)
            bound.shapes[("shape", -1, vid)] = t.shape
            data = dynamic.to_padded(data, t.shape, want.sizes,
                                     storage.dtype(t.dtype).itemsize, f"input {i}")
        elif t.shape != tuple(want.sizes):
            raise InputError(f"input {i}: expected shape {list(want.sizes)}, got "
                             f"{list(t.shape)}")
        bound.host_inputs[vid] = t
        bound.uploads.append((vid, data))
    return bound


class _FedOnGpu:
    """``DynamicEnv.host_inputs`` entry of an input the GPU fills (LastArgmax): a host step
    that would read its values cannot."""

    def __init__(self, index: int):
        self.index = index

    def __getattr__(self, name):
        raise InputError(f"input {self.index}: its values are read on the host (a SymInt or "
                         "shape computed from them), so it cannot be LastArgmax()")
