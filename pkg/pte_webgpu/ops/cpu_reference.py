"""What the ops' CPU references share (pure Python, no numpy): flat arrays, index maps
and IEEE-safe scalar math. An op's reference function ``fn(read, values, args)`` returns
its output's flat values (a list per tensor for a ValueList output); reference.py runs
them in float64 and rounds each result to its tensor's dtype."""

from __future__ import annotations

import math

from ..errors import FormatError
from ..model import f32
from .common import contiguous_strides


class Array:
    """A flat list of Python floats (ints for integer tensors) with a shape (C order)."""

    __slots__ = ("shape", "values")

    def __init__(self, shape, values: list):
        self.shape, self.values = tuple(shape), values


def round_one(v: float, code: str) -> float:
    """``v`` through struct format ``code`` ("f", "e"); beyond its range, +-inf."""
    return f32.to_f32(v) if code == "f" else f32.to_f16(v)


def to_f32(value: float) -> float:
    """``value`` rounded to float32, as torch casts a scalar argument (beyond range: +-inf)."""
    return f32.to_f32(value)


# --- index maps ----------------------------------------------------------------------

def strided_index(shape, strides) -> list[int]:
    """For each element of ``shape`` (C order), ``sum(coord[d] * strides[d])``."""
    index = [0]
    for size, stride in zip(shape, strides):
        index = [i + j * stride for i in index for j in range(size)]
    return index


def broadcast_index_map(shape: tuple, out_shape: tuple) -> list[int]:
    """For each output element (C order), the flat index of the ``shape`` element it reads."""
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    if len(shape) > len(out_shape) or any(s not in (1, o) for s, o in zip(padded, out_shape)):
        raise FormatError(f"shape {list(shape)} does not broadcast to {list(out_shape)}")
    strides = [0 if s == 1 else t for s, t in zip(padded, contiguous_strides(padded))]
    return strided_index(out_shape, strides)


def norm_dims(dims, rank: int) -> list[int]:
    span = max(rank, 1)
    if any(not -span <= d < span for d in dims):
        raise FormatError(f"dims {list(dims)} are out of range for rank {rank}")
    return sorted({d % span for d in dims})


def lines(shape, dims, n: int) -> list[list[int]]:
    """Flat element positions of each line (reduced over ``dims``), in line order."""
    kept = [1 if d in dims else s for d, s in enumerate(shape)]
    strides = [0 if d in dims else t for d, t in enumerate(contiguous_strides(kept))]
    index = strided_index(shape, strides)
    out = [[] for _ in range(max(index, default=-1) + 1)]
    for pos, line in zip(range(n), index):
        out[line].append(pos)
    return out


# --- elementwise -------------------------------------------------------------------

def elementwise(a: Array, b: Array, out_shape: tuple, fn) -> list:
    ai, bi = broadcast_index_map(a.shape, out_shape), broadcast_index_map(b.shape, out_shape)
    av, bv = a.values, b.values
    return [fn(av[i], bv[j]) for i, j in zip(ai, bi)]


def exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def rsqrt(x: float) -> float:
    if x != x or x < 0:
        return math.nan
    return 1.0 / math.sqrt(x) if x else math.copysign(math.inf, x)
