"""Checked little-endian reads and slices of an untrusted byte buffer."""

from __future__ import annotations

import struct

from ..errors import FormatError

_FORMATS = {2: struct.Struct("<H"), 4: struct.Struct("<I"), 8: struct.Struct("<Q")}


def as_view(data) -> memoryview:
    """A flat, read-only byte view of bytes/bytearray/memoryview/array without copying."""
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view.toreadonly()


def uint(buf, offset: int, size: int, what: str) -> int:
    """Unsigned little-endian integer of ``size`` bytes at ``offset``."""
    check_span(buf, offset, size, what)
    return _FORMATS[size].unpack_from(buf, offset)[0]


def check_span(buf, offset: int, size: int, what: str) -> None:
    if offset < 0 or size < 0 or offset + size > len(buf):
        raise FormatError(
            f"{what}: {size} bytes at offset {offset} do not fit in the {len(buf)}-byte buffer",
            offset=offset,
        )


def span(buf: memoryview, offset: int, size: int, what: str) -> memoryview:
    """Zero-copy slice, after checking it lies inside ``buf``."""
    check_span(buf, offset, size, what)
    return buf[offset:offset + size]


def text(raw: bytes | None, what: str) -> str:
    """Decode a FlatBuffer string field, naming the field when it is not UTF-8."""
    if raw is None:
        return ""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(f"{what}: string is not valid UTF-8 ({e.reason})", field=what) from None


def byte_vector(table, vtable_slot_offset: int) -> memoryview:
    """A [ubyte] field as a zero-copy view (generated code only offers per-byte reads)."""
    tab = table._tab
    o = tab.Offset(vtable_slot_offset)
    if o == 0:
        return memoryview(b"")
    start = tab.Vector(o)
    return memoryview(tab.Bytes)[start:start + tab.VectorLen(o)]


def scalar_vector(count: int, get) -> tuple:
    """All items of a verified scalar vector through its generated accessor."""
    return tuple(get(i) for i in range(count))


def check_ids(ids, n_values: int, where: str, owner: str = "plan") -> list[int]:
    """Value ids must index the ``n_values`` values of their plan or graph."""
    for i, v in enumerate(ids):
        if not 0 <= v < n_values:
            raise FormatError(f"value id {v} is out of range (the {owner} has {n_values} values)",
                              field=f"{where}[{i}]")
    return list(ids)


def magic(buf, offset: int, expected: bytes, what: str, file: str = "") -> None:
    """``expected`` at ``offset``, or a FormatError naming what was found there."""
    found = bytes(buf[offset:offset + len(expected)])
    if found != expected:
        raise FormatError(f"{file + ': ' if file else ''}expected {what} magic {expected!r}, "
                          f"found {found!r}", offset=offset)


def header(buf, cls, prefix: str, layout):
    """``cls(*fields)`` from a fixed header: ``layout`` is ``(name, offset, size)`` per field."""
    return cls(*(uint(buf, offset, size, f"{prefix} {name}") for name, offset, size in layout))


def union_reader(table, code: int, what: str, where: str):
    """A reader of a flatbuffer union's payload as one member type: ``read(cls)``;
    a FormatError when the union has a type but no payload."""
    if table is None:
        raise FormatError(f"{what} of type code {code} has no payload", field=where)

    def read(cls):
        obj = cls()
        obj.Init(table.Bytes, table.Pos)
        return obj
    return read
