"""External data files (``.ptd``, FlatTensor ``FT01`` with an ``FH01`` header)."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FormatError
from . import fbs_schema, verify
from ._generated import flat_tensor_generated as fb
from .checked_reads import as_view, header, magic, span, text

HEADER_MAGIC = b"FH01"
MIN_HEADER_LENGTH = 40
_LAYOUT = (("header_length", 12, 4), ("flatbuffer_offset", 16, 8), ("flatbuffer_size", 24, 8),
           ("segment_base_offset", 32, 8), ("segment_data_size", 40, 8))


@dataclass(frozen=True)
class FlatTensorHeader:
    header_length: int
    flatbuffer_offset: int
    flatbuffer_size: int
    segment_base_offset: int
    segment_data_size: int


@dataclass
class FlatTensorFile:
    name: str
    header: FlatTensorHeader
    named_data: dict[str, memoryview]  # key -> zero-copy bytes

    def get(self, key: str) -> memoryview | None:
        return self.named_data.get(key)


def read_header(buf: memoryview, name: str) -> FlatTensorHeader:
    if len(buf) < 8 + MIN_HEADER_LENGTH:
        raise FormatError(f"{name}: {len(buf)} bytes is too short for a .ptd file", offset=0)
    magic(buf, 8, HEADER_MAGIC, ".ptd header", name)
    h = header(buf, FlatTensorHeader, "FH01", _LAYOUT)
    if h.header_length < MIN_HEADER_LENGTH:
        raise FormatError(f"{name}: FH01 header_length {h.header_length} < {MIN_HEADER_LENGTH}",
                          offset=12)
    if h.flatbuffer_offset + h.flatbuffer_size > len(buf):
        raise FormatError(f"{name}: flatbuffer ends at {h.flatbuffer_offset + h.flatbuffer_size}"
                          f" but the file has {len(buf)} bytes", offset=16)
    if h.segment_base_offset + h.segment_data_size > len(buf):
        raise FormatError(f"{name}: segment data ends at "
                          f"{h.segment_base_offset + h.segment_data_size} but the file has "
                          f"{len(buf)} bytes (truncated file?)", offset=32)
    return h


def read_flat_tensor(data, name: str = ".ptd") -> FlatTensorFile:
    """Parse one ``.ptd`` file; ``name`` appears in error messages."""
    buf = as_view(data)
    h = read_header(buf, name)
    fb_bytes = buf[:h.flatbuffer_offset + h.flatbuffer_size]
    verify.verify(fb_bytes, fbs_schema.load("flat_tensor"), f"{name} (FT01)")
    root = fb.FlatTensor.GetRootAs(fb_bytes, 0)
    segments = []
    for i in range(root.SegmentsLength()):
        s = root.Segments(i)
        segments.append(span(buf, h.segment_base_offset + s.Offset(), s.Size(),
                             f"{name} segment {i}"))
    named = {}
    for i in range(root.NamedDataLength()):
        nd = root.NamedData(i)
        key = text(nd.Key(), f"{name} named_data[{i}].key")
        if nd.SegmentIndex() >= len(segments):
            raise FormatError(f"{name}: key {key!r} points at segment {nd.SegmentIndex()}, but "
                              f"there are {len(segments)}", field=f"named_data[{i}]")
        named.setdefault(key, segments[nd.SegmentIndex()])
    return FlatTensorFile(name, h, named)
