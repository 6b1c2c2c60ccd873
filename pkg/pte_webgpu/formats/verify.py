"""Bounds verification of a FlatBuffer before any generated accessor reads it.

flatc's Python code trusts its input: an offset past the end raises
struct.error, a negative one silently reads from the end, and a vector that
claims 2**32 elements makes a loop spin. This walks the buffer once, driven by
the parsed ``.fbs`` schema, and checks every offset, length and vtable against
the buffer. It also caps the work: each table visit and vector element is
charged to a budget proportional to the buffer size, so shared sub-objects
cannot make later reads quadratic.
"""

from __future__ import annotations

import struct

from ..errors import FormatError
from .fbs_schema import Field, Schema

_U16 = struct.Struct("<H").unpack_from
_U32 = struct.Struct("<I").unpack_from
_I32 = struct.Struct("<i").unpack_from
MAX_DEPTH = 64


def verify(buf, schema: Schema, what: str) -> None:
    """Raise FormatError unless ``buf`` is a well-formed ``schema.root`` buffer."""
    n = len(buf)
    if n < 8:
        raise FormatError(f"{what}: {n} bytes is too short for a FlatBuffer (need at least 8)",
                          offset=0)
    ident = bytes(buf[4:8])
    if ident != schema.identifier.encode():
        raise FormatError(f"{what}: expected file identifier {schema.identifier!r}, found {ident!r}",
                          offset=4)
    _Walker(buf, schema, what).table(_U32(buf, 0)[0], schema.root, (schema.root,), 0)


class _Walker:
    def __init__(self, buf, schema: Schema, what: str):
        self.buf, self.n, self.schema, self.what = buf, len(buf), schema, what
        self.budget = self.n // 2 + 64

    def fail(self, msg: str, path: tuple, offset: int):
        raise FormatError(f"{self.what}: {msg}", offset=offset, field=".".join(path))

    def charge(self, units: int, path, offset):
        self.budget -= units
        if self.budget < 0:
            self.fail("more structure than the buffer can hold (shared or looping offsets)",
                      path, offset)

    def span(self, pos: int, size: int, path, what: str):
        if pos < 0 or pos + size > self.n:
            self.fail(f"{what} of {size} bytes at {pos} runs past the end ({self.n} bytes)",
                      path, pos)

    def table(self, pos: int, name: str, path: tuple, depth: int):
        if depth > MAX_DEPTH:
            self.fail(f"tables nested deeper than {MAX_DEPTH}", path, pos)
        self.charge(1, path, pos)
        self.span(pos, 4, path, "table")
        vt = pos - _I32(self.buf, pos)[0]
        self.span(vt, 4, path, "vtable header")
        vt_size, inline_size = _U16(self.buf, vt)[0], _U16(self.buf, vt + 2)[0]
        if vt_size < 4 or vt_size % 2:
            self.fail(f"vtable size {vt_size} is not an even number >= 4", path, vt)
        self.span(vt, vt_size, path, "vtable")
        self.span(pos, inline_size, path, "table body")
        union_type = 0
        for f in self.schema.tables[name]:
            entry = 4 + 2 * f.slot
            if entry >= vt_size:
                break
            off = _U16(self.buf, vt + entry)[0]
            if off == 0:
                union_type = 0 if f.kind == "union_type" else union_type
                continue
            if off + f.size > inline_size:
                self.fail(f"field {f.name!r} at {off} overflows its table of {inline_size} bytes",
                          path + (f.name,), pos + off)
            fpos = pos + off
            if f.kind == "union_type":
                union_type = self.buf[fpos]
            elif f.kind != "scalar":
                self.reference(fpos, f, path + (f.name,), depth, union_type)

    def target(self, fpos: int, path) -> int:
        return fpos + _U32(self.buf, fpos)[0]

    def reference(self, fpos: int, f: Field, path: tuple, depth: int, union_type: int):
        pos = self.target(fpos, path)
        if f.kind == "string":
            self.string(pos, path)
        elif f.kind == "table":
            self.table(pos, f.target, path, depth + 1)
        elif f.kind == "union":
            members = self.schema.unions[f.target]
            if 1 <= union_type <= len(members):  # unknown codes are judged by the converter
                member = members[union_type - 1]
                self.table(pos, member, path[:-1] + (f"{path[-1]}<{member}>",), depth + 1)
        else:
            self.vector(pos, f, path, depth)

    def string(self, pos: int, path):
        self.span(pos, 4, path, "string length")
        length = _U32(self.buf, pos)[0]
        self.span(pos + 4, length + 1, path, "string")
        self.charge(length // 8, path, pos)

    def vector(self, pos: int, f: Field, path: tuple, depth: int):
        self.span(pos, 4, path, "vector length")
        count = _U32(self.buf, pos)[0]
        self.span(pos + 4, count * f.element_size, path, f"vector of {count} elements")
        self.charge(count, path, pos)
        if f.element_kind == "scalar":
            return
        for i in range(count):
            epos = pos + 4 + 4 * i
            item = path[:-1] + (f"{path[-1]}[{i}]",)
            if f.element_kind == "string":
                self.string(self.target(epos, item), item)
            else:
                self.table(self.target(epos, item), f.target, item, depth + 1)
