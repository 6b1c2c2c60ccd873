"""A bounds walk over a GGUF file's header before gguf.GGUFReader reads it.

GGUFReader trusts the counts a file claims: an array whose items lie past the end of the
file loops without end (each missing item reads as zero bytes), and every array item
becomes a numpy view of ~100 bytes. This walk reads the same header (magic, version,
key/value pairs, tensor infos) with struct, and raises FormatError naming the field when a
count, length, type or tensor extent does not fit the file, so that what the reader then
builds stays within a small multiple of the file's size.

Layout (GGUF v2/v3, gguf's docs/gguf.md): "GGUF", u32 version, u64 tensor count, u64 kv
count; each kv: string key, u32 value type, value; a string is u64 length + UTF-8 bytes; an
array is u32 item type, u64 count, items; each tensor info: string name, u32 n_dims,
u64 dims[n_dims], u32 ggml type, u64 data offset (from the aligned end of the header).
"""

from __future__ import annotations

import mmap
import struct
from pathlib import Path

from ..errors import FormatError

_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9
_MAX_NESTING = 2  # arrays of arrays are legal; deeper nests are not written by anyone
_MAX_DIMS = 4     # GGML_MAX_DIMS
# Array items the reader may turn into numpy views: at most one per 4 bytes of file (real
# files hold a handful of arrays beside megabytes of tensor data).
_BYTES_PER_ITEM = 4


class _Walk:
    def __init__(self, buf, size: int):
        self.buf, self.size, self.at, self.order = buf, size, 0, "<"
        self.items = 0

    def take(self, fmt: str, what: str):
        n = struct.calcsize(fmt)
        if self.at + n > self.size:
            raise FormatError(f"GGUF ends inside {what} ({n} bytes needed)", offset=self.at, field=what)
        value = struct.unpack_from(self.order + fmt, self.buf, self.at)[0]
        self.at += n
        return value

    def string(self, what: str, decode: bool) -> str | None:
        length = self.take("Q", what)
        if length > self.size - self.at:
            raise FormatError(f"string of {length} bytes runs past the end of the file",
                              offset=self.at, field=what)
        raw = self.buf[self.at:self.at + length] if decode else None
        self.at += length
        if raw is None:
            return None
        try:
            return bytes(raw).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"name is not UTF-8: {exc}", offset=self.at - length, field=what) from None

    def value(self, vtype: int, what: str, depth: int = 0) -> None:
        if vtype in _SCALAR:
            self.take(_SCALAR[vtype], what)
        elif vtype == _STRING:
            self.string(what, decode=False)
        elif vtype == _ARRAY:
            itype = self.take("I", what)
            count = self.take("Q", what)
            least = struct.calcsize(_SCALAR[itype]) if itype in _SCALAR else 8 if itype == _STRING else 12
            if itype not in _SCALAR and itype not in (_STRING, _ARRAY):
                raise FormatError(f"array of unknown value type {itype}", offset=self.at, field=what)
            if itype == _ARRAY and depth >= _MAX_NESTING:
                raise FormatError(f"arrays nested deeper than {_MAX_NESTING}", offset=self.at, field=what)
            if count * least > self.size - self.at:
                raise FormatError(f"array of {count} items cannot fit in the {self.size - self.at} "
                                  f"bytes left", offset=self.at, field=what)
            self.items += count
            if self.items * _BYTES_PER_ITEM > self.size:
                raise FormatError(f"{self.items} array items in a {self.size}-byte file (at most one "
                                  f"per {_BYTES_PER_ITEM} bytes)", offset=self.at, field=what)
            if itype in _SCALAR:  # fixed size: skip them at once
                self.at += count * least
            else:
                for _ in range(count):
                    self.value(itype, what, depth + 1)
        else:
            raise FormatError(f"unknown value type {vtype}", offset=self.at, field=what)


def check(path) -> int:
    """Walk the header of the GGUF at ``path``; return the file size. FormatError on a misfit."""
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType

    size = Path(path).stat().st_size
    if size < 24:
        raise FormatError(f"{path}: {size} bytes is too short for a GGUF header", field="header")
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as buf:
        w = _Walk(buf, size)
        if bytes(buf[:4]) != b"GGUF":
            raise FormatError(f"{path}: not a GGUF file (magic {bytes(buf[:4])!r})", offset=0, field="magic")
        w.at = 4
        version = w.take("I", "version")
        if version & 0xFFFF == 0:  # written on a machine of the other byte order
            w.order, w.at = ">", 4
            version = w.take("I", "version")
        if version not in (2, 3):
            raise FormatError(f"GGUF version {version} (readable: 2, 3)", offset=4, field="version")
        n_tensors, n_kv = w.take("Q", "tensor_count"), w.take("Q", "kv_count")
        # the least a kv (key length, type, one byte) or a tensor info takes
        if n_kv * 13 + n_tensors * 28 > size - w.at:
            raise FormatError(f"{n_kv} keys and {n_tensors} tensors cannot fit in {size} bytes",
                              offset=8, field="kv_count")
        alignment = 32
        keys = set()
        for _ in range(n_kv):
            key = w.string("metadata key", decode=True)
            if key in keys:
                raise FormatError(f"metadata key {key!r} appears twice", offset=w.at, field=key)
            keys.add(key)
            vtype = w.take("I", key)
            start = w.at
            w.value(vtype, key)
            if key == "general.alignment":
                if vtype != 4:
                    raise FormatError("general.alignment is not a u32", offset=start, field=key)
                alignment = struct.unpack_from(w.order + "I", buf, start)[0]
                if alignment == 0 or alignment & (alignment - 1):
                    raise FormatError(f"alignment {alignment} is not a power of two", offset=start, field=key)
        infos, names = [], set()
        for _ in range(n_tensors):
            name = w.string("tensor name", decode=True)
            if name in names:
                raise FormatError(f"tensor {name!r} appears twice", offset=w.at, field=name)
            names.add(name)
            n_dims = w.take("I", name)
            if n_dims > _MAX_DIMS:
                raise FormatError(f"tensor has {n_dims} dimensions (at most {_MAX_DIMS})",
                                  offset=w.at, field=name)
            dims = [w.take("Q", name) for _ in range(n_dims)]
            raw_type = w.take("I", name)
            offset = w.take("Q", name)
            infos.append((name, dims, raw_type, offset))
        data_start = -(-w.at // alignment) * alignment
        for name, dims, raw_type, offset in infos:
            try:
                block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(raw_type)]
            except (ValueError, KeyError):
                raise FormatError(f"unknown GGML tensor type {raw_type}", field=name) from None
            count = 1
            for d in dims:
                count *= d
            if dims and dims[0] % block:
                raise FormatError(f"rows of {dims[0]} values are not whole blocks of {block}", field=name)
            nbytes = count // block * type_size
            if data_start + offset + nbytes > size:
                raise FormatError(f"tensor data ({nbytes} bytes at {data_start + offset}) runs past the "
                                  f"end of the {size}-byte file", offset=data_start + offset, field=name)
    return size
