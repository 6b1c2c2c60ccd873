"""Python floats (Doubles in a program, values in a list input) as float32 or float16.

The one place where a float is packed for the GPU. torch converts a Double two ways,
and each op says which applies:

- ``to_f32`` / ``pack_f32``: as a tensor cast (eps added to a float32 tensor, a
  scalar operand, a list value): beyond the range gives +-inf, never OverflowError.
- ``checked_f32``: as ``Scalar.to<float>()`` (alpha, clamp and hardtanh bounds):
  a finite value beyond float32 is refused, as torch refuses it ("value cannot be
  converted to type float without overflow"); inf and NaN pass.
"""

from __future__ import annotations

import math
import re
import struct

_FIELD = re.compile(r"(\d*)([a-zA-Z?])")
F32_MAX = struct.unpack("<f", b"\xff\xff\x7f\x7f")[0]  # 3.4028234663852886e38


def pack_f32(value: float) -> bytes:
    """``value`` as little-endian float32 bytes, rounded to nearest; beyond the range
    (after rounding) it is +-inf, as a tensor cast gives."""
    try:
        return struct.pack("<f", value)
    except OverflowError:
        return struct.pack("<f", math.copysign(math.inf, value))


def pack_f16(value: float) -> bytes:
    try:
        return struct.pack("<e", value)
    except OverflowError:
        return struct.pack("<e", math.copysign(math.inf, value))


def to_f32(value: float) -> float:
    """``value`` rounded to float32 (beyond the range: +-inf)."""
    return struct.unpack("<f", pack_f32(float(value)))[0]


def checked_f32(value: float, what: str, error: type) -> float:
    """``value`` as float32, or ``error`` naming ``what`` when a finite value exceeds
    float32's range (torch's ``Scalar.to<float>()`` refuses it the same way)."""
    value = float(value)
    if math.isfinite(value) and abs(value) > F32_MAX:
        raise error(f"{what} {value!r} does not fit float32 (torch refuses it too: "
                    "\"value cannot be converted to type float without overflow\")")
    return to_f32(value)


def pack(fmt: str, *values) -> bytes:
    """``struct.pack(fmt, *values)`` where every ``f`` (``e``) field is first cast to
    float32 (float16) as ``to_f32`` does: params uniforms never raise OverflowError."""
    codes = [c for count, c in _FIELD.findall(fmt) if c not in "sp"
             for _ in range(int(count or 1))]
    cast = {"f": to_f32, "e": to_f16}
    return struct.pack(fmt, *(cast[c](v) if c in cast else v for c, v in zip(codes, values)))


def to_f16(value: float) -> float:
    return struct.unpack("<e", pack_f16(float(value)))[0]


FLOAT_PACKERS = {"float32": pack_f32, "float16": pack_f16,
                 "float64": lambda v: struct.pack("<d", v)}
