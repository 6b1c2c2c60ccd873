"""A reader for the small FlatBuffers schema subset in ``schema/*.fbs``.

The same ``.fbs`` files feed ``flatc`` (generated accessors in ``_generated/``)
and the bounds verifier in ``verify.py``, so the layout is written down once.
Supported: namespace, enum, union, table (scalars, strings, tables, unions,
vectors of those), root_type, file_identifier, ``//`` comments, attributes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

SCALAR_SIZES = {
    "bool": 1, "byte": 1, "ubyte": 1, "int8": 1, "uint8": 1,
    "short": 2, "ushort": 2, "int16": 2, "uint16": 2,
    "int": 4, "uint": 4, "int32": 4, "uint32": 4, "float": 4, "float32": 4,
    "long": 8, "ulong": 8, "int64": 8, "uint64": 8, "double": 8, "float64": 8,
}


@dataclass(frozen=True)
class Field:
    """One vtable slot. ``kind``: scalar, string, table, union_type, union, vector."""

    name: str
    slot: int
    kind: str
    size: int  # bytes of the inline field (scalar size, or 4 for a reference)
    target: str = ""  # table / union name, or the element type of a vector
    element_kind: str = ""  # for vectors: scalar, string or table
    element_size: int = 0


@dataclass
class Schema:
    namespace: str = ""
    root: str = ""
    identifier: str = ""
    enums: dict[str, str] = field(default_factory=dict)  # enum name -> underlying type
    unions: dict[str, list[str]] = field(default_factory=dict)  # code-1 -> member table
    tables: dict[str, list[Field]] = field(default_factory=dict)


_TOKENS = re.compile(r'"[^"]*"|[A-Za-z_][\w.]*|-?\d[\w.+-]*|[{}()\[\]:;=,]')


def parse(text: str) -> Schema:
    """Parse one schema file of the supported subset."""
    text = re.sub(r"//[^\n]*", "", text)
    toks = _TOKENS.findall(text)
    schema = Schema()
    raw_tables: dict[str, list[tuple[str, str]]] = {}
    i = 0

    def block(start: int) -> tuple[list[str], int]:
        assert toks[start] == "{", toks[start]
        end = toks.index("}", start)
        return toks[start + 1:end], end + 1

    while i < len(toks):
        tok = toks[i]
        if tok == "namespace":
            schema.namespace, i = toks[i + 1], i + 3
        elif tok == "root_type":
            schema.root, i = toks[i + 1], i + 3
        elif tok == "file_identifier":
            schema.identifier, i = toks[i + 1].strip('"'), i + 3
        elif tok == "enum":
            schema.enums[toks[i + 1]] = toks[i + 3]
            _, i = block(i + 4)
        elif tok == "union":
            name = toks[i + 1]
            body, i = block(i + 2)
            schema.unions[name] = [t for t in body if t != ","]
        elif tok == "table":
            name = toks[i + 1]
            body, i = block(i + 2)
            raw_tables[name] = _table_fields(body)
        else:
            raise ValueError(f"unsupported schema token {tok!r}")
    for name, fields in raw_tables.items():
        schema.tables[name] = _layout(schema, raw_tables, fields)
    return schema


def _table_fields(body: list[str]) -> list[tuple[str, str]]:
    """[(field name, type)] from a table body, dropping defaults and attributes."""
    out, j = [], 0
    while j < len(body):
        name, type_ = body[j], body[j + 2]
        if type_ == "[":
            type_ = "[" + body[j + 3] + "]"
        out.append((name, type_))
        j = body.index(";", j) + 1
    return out


def _layout(schema: Schema, tables, fields) -> list[Field]:
    out, slot = [], 0
    for name, type_ in fields:
        if type_.startswith("["):
            elem = type_[1:-1]
            ekind, esize = _element(schema, tables, elem)
            out.append(Field(name, slot, "vector", 4, elem, ekind, esize))
        elif type_ in schema.unions:
            out.append(Field(name + "_type", slot, "union_type", 1, type_))
            slot += 1
            out.append(Field(name, slot, "union", 4, type_))
        elif type_ in tables:
            out.append(Field(name, slot, "table", 4, type_))
        elif type_ == "string":
            out.append(Field(name, slot, "string", 4))
        else:
            out.append(Field(name, slot, "scalar", _scalar_size(schema, type_), type_))
        slot += 1
    return out


def _element(schema, tables, elem) -> tuple[str, int]:
    if elem in tables:
        return "table", 4
    if elem == "string":
        return "string", 4
    return "scalar", _scalar_size(schema, elem)


def _scalar_size(schema: Schema, type_: str) -> int:
    return SCALAR_SIZES[schema.enums.get(type_, type_)]


@lru_cache(maxsize=None)
def load(name: str) -> Schema:
    """The packaged schema ``schema/<name>.fbs``, parsed once per process."""
    text = resources.files(__package__).joinpath("schema", name + ".fbs").read_text("utf-8")
    return parse(text)
