"""FlatBuffers as plain Python trees, read and written through the package's own schemas.

``decode(buf, schema)`` turns a (verified) buffer into dicts: a table is a dict of
its present fields, a vector a list, a string bytes, a union field ``x`` a dict
next to its ``x_type`` code. ``encode(tree, schema)`` writes such a tree back, so
tests can change one field of a real exported program (a value id, a dim, a
scalar) and rebuild a well-formed file around it. Scalars are wrapped to their
field's width, so a mutation can put any integer anywhere.
"""

from __future__ import annotations

import struct

import flatbuffers
from flatbuffers import number_types as N
from pte_webgpu.formats.fbs_schema import Schema

_FORMATS = {"bool": "<?", "byte": "<b", "int8": "<b", "ubyte": "<B", "uint8": "<B",
            "short": "<h", "int16": "<h", "ushort": "<H", "uint16": "<H",
            "int": "<i", "int32": "<i", "uint": "<I", "uint32": "<I",
            "long": "<q", "int64": "<q", "ulong": "<Q", "uint64": "<Q",
            "float": "<f", "float32": "<f", "double": "<d", "float64": "<d"}
_FLAGS = {"<?": N.BoolFlags, "<b": N.Int8Flags, "<B": N.Uint8Flags, "<h": N.Int16Flags,
          "<H": N.Uint16Flags, "<i": N.Int32Flags, "<I": N.Uint32Flags, "<q": N.Int64Flags,
          "<Q": N.Uint64Flags, "<f": N.Float32Flags, "<d": N.Float64Flags}


def scalar_format(schema: Schema, type_: str) -> str:
    return _FORMATS[schema.enums.get(type_, type_)]


def fit(fmt: str, value):
    """``value`` made to fit a scalar format: integers wrap, floats pass, bools cast."""
    if fmt in ("<f", "<d"):
        return float(value)
    if fmt == "<?":
        return bool(value)
    bits = 8 * struct.calcsize(fmt)
    value = int(value) & ((1 << bits) - 1)
    if fmt[1].islower() and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


# --- decode ----------------------------------------------------------------------------
def decode(buf, schema: Schema) -> dict:
    buf = bytes(buf)
    return _table(buf, struct.unpack_from("<I", buf, 0)[0], schema.root, schema)


def _table(buf: bytes, pos: int, name: str, schema: Schema) -> dict:
    vt = pos - struct.unpack_from("<i", buf, pos)[0]
    vt_size = struct.unpack_from("<H", buf, vt)[0]
    out = {}
    for f in schema.tables[name]:
        entry = 4 + 2 * f.slot
        if entry >= vt_size:
            break
        off = struct.unpack_from("<H", buf, vt + entry)[0]
        if not off:
            continue
        fpos = pos + off
        if f.kind == "scalar":
            out[f.name] = struct.unpack_from(scalar_format(schema, f.target), buf, fpos)[0]
        elif f.kind == "union_type":
            out[f.name] = buf[fpos]
        else:
            target = fpos + struct.unpack_from("<I", buf, fpos)[0]
            if f.kind == "string":
                out[f.name] = _string(buf, target)
            elif f.kind == "table":
                out[f.name] = _table(buf, target, f.target, schema)
            elif f.kind == "union":
                code = out.get(f.name + "_type", 0)
                members = schema.unions[f.target]
                if 1 <= code <= len(members):
                    out[f.name] = _table(buf, target, members[code - 1], schema)
            else:
                out[f.name] = _vector(buf, target, f, schema)
    return out


def _string(buf: bytes, pos: int) -> bytes:
    n = struct.unpack_from("<I", buf, pos)[0]
    return buf[pos + 4:pos + 4 + n]


def _vector(buf: bytes, pos: int, f, schema: Schema) -> list:
    n = struct.unpack_from("<I", buf, pos)[0]
    start = pos + 4
    if f.element_kind == "scalar":
        fmt = scalar_format(schema, f.target)
        if fmt == "<B":
            return bytearray(buf[start:start + n])
        return list(struct.unpack_from(f"<{n}{fmt[1]}", buf, start))
    items = []
    for i in range(n):
        at = start + 4 * i
        target = at + struct.unpack_from("<I", buf, at)[0]
        items.append(_string(buf, target) if f.element_kind == "string"
                     else _table(buf, target, f.target, schema))
    return items


# --- encode ----------------------------------------------------------------------------
def encode(tree: dict, schema: Schema) -> bytes:
    b = flatbuffers.Builder(1024)
    b.ForceDefaults(True)
    root = _build_table(b, tree, schema.root, schema)
    b.Finish(root, file_identifier=schema.identifier.encode())
    return bytes(b.Output())


def _build_table(b, tree: dict, name: str, schema: Schema) -> int:
    fields = schema.tables[name]
    refs = {}
    for f in fields:  # children first: a table is built after what it points at
        if f.name not in tree or f.kind in ("scalar", "union_type"):
            continue
        value = tree[f.name]
        if f.kind == "string":
            refs[f.name] = b.CreateString(bytes(value))
        elif f.kind == "table":
            refs[f.name] = _build_table(b, value, f.target, schema)
        elif f.kind == "union":
            code = tree.get(f.name + "_type", 0)
            members = schema.unions[f.target]
            if 1 <= code <= len(members):
                refs[f.name] = _build_table(b, value, members[code - 1], schema)
        else:
            refs[f.name] = _build_vector(b, value, f, schema)
    b.StartObject(max((f.slot for f in fields), default=-1) + 1)
    for f in fields:
        if f.kind in ("scalar", "union_type") and f.name in tree:
            fmt = "<B" if f.kind == "union_type" else scalar_format(schema, f.target)
            b.PrependSlot(_FLAGS[fmt], f.slot, fit(fmt, tree[f.name]), None)
        elif f.name in refs:
            b.PrependUOffsetTRelativeSlot(f.slot, refs[f.name], 0)
    return b.EndObject()


def _build_vector(b, items, f, schema: Schema) -> int:
    if f.element_kind == "scalar":
        fmt = scalar_format(schema, f.target)
        if fmt in ("<B", "<b"):
            return b.CreateByteVector(bytes(fit("<B", x) for x in items))
        b.StartVector(struct.calcsize(fmt), len(items), struct.calcsize(fmt))
        for x in reversed(items):
            b.Prepend(_FLAGS[fmt], fit(fmt, x))
        return b.EndVector()
    if f.element_kind == "string":
        refs = [b.CreateString(bytes(s)) for s in items]
    else:
        refs = [_build_table(b, t, f.target, schema) for t in items]
    b.StartVector(4, len(refs), 4)
    for r in reversed(refs):
        b.PrependUOffsetTRelative(r)
    return b.EndVector()
