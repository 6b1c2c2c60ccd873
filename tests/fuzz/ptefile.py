"""A .pte file taken apart into editable trees and put back together.

``Pte.parse(data)`` gives ``program`` (the ET12 flatbuffer as a fbtree dict),
``segments`` (their bytes) and, for every segment that holds a Vulkan delegate,
``vk[segment]`` = (VkGraph tree, constant bytes region). ``build()`` re-encodes
the graphs into VH00 blobs, lays the segments out again, rewrites the segment
table and the eh00 header, so an edit anywhere still gives a file whose offsets
are right: only the edited meaning is wrong.
"""

from __future__ import annotations

import copy
import struct
from dataclasses import dataclass, field

from pte_webgpu.formats import fbs_schema, pte, vulkan

from . import fbtree

PROGRAM = fbs_schema.load("program")
VKGRAPH = fbs_schema.load("vkgraph")
ALIGN = 16
SEGMENT_LOCATION = 1  # DataLocation.SEGMENT


def _pad(n: int) -> int:
    return -n % ALIGN


@dataclass
class Pte:
    program: dict
    segments: list[bytes]
    vk: dict[int, tuple[dict, bytes]] = field(default_factory=dict)

    @classmethod
    def parse(cls, data: bytes) -> "Pte":
        view = memoryview(data)
        header = pte.read_extended_header(view)
        program_bytes = bytes(view[:header.program_size] if header else view)
        tree = fbtree.decode(program_bytes, PROGRAM)
        base = header.segment_base_offset if header else 0
        segments = [bytes(view[base + s.get("offset", 0):base + s.get("offset", 0) + s.get("size", 0)])
                    for s in tree.get("segments", [])]
        out = cls(tree, segments)
        for plan in tree.get("execution_plan", []):
            for d in plan.get("delegates", []):
                ref = d.get("processed", {})
                if d.get("id") == vulkan_id() and ref.get("location") == SEGMENT_LOCATION:
                    blob = segments[ref.get("index", 0)]
                    h = vulkan.read_header(memoryview(blob))
                    graph = fbtree.decode(
                        blob[h.flatbuffer_offset:h.flatbuffer_offset + h.flatbuffer_size], VKGRAPH)
                    size = h.bytes_size or max(0, len(blob) - h.bytes_offset)
                    out.vk[ref.get("index", 0)] = (graph, blob[h.bytes_offset:h.bytes_offset + size])
        return out

    def copy(self) -> "Pte":
        return Pte(copy.deepcopy(self.program), list(self.segments),
                   {k: (copy.deepcopy(g), b) for k, (g, b) in self.vk.items()})

    # --- convenient views ----------------------------------------------------------
    def plan(self, i: int = 0) -> dict:
        return self.program["execution_plan"][i]

    def graph(self, segment: int | None = None) -> dict:
        """The VkGraph tree of ``segment`` (the first Vulkan delegate by default)."""
        return self.vk[min(self.vk) if segment is None else segment][0]

    # --- writing -------------------------------------------------------------------
    def build(self) -> bytes:
        segments = list(self.segments)
        for index, (graph, constants) in self.vk.items():
            segments[index] = vh00(fbtree.encode(graph, VKGRAPH), constants)
        table, at = [], 0
        for s in segments:
            table.append({"offset": at, "size": len(s)})
            at += len(s) + _pad(len(s))
        program = dict(self.program, segments=table)
        fb = fbtree.encode(program, PROGRAM)
        header_len = 32
        program_size = len(fb) + header_len
        base = program_size + _pad(program_size)
        header = b"eh00" + struct.pack("<IQQQ", header_len, program_size, base, at)
        root = struct.unpack_from("<I", fb, 0)[0] + header_len
        out = bytearray(struct.pack("<I", root) + fb[4:8] + header + fb[8:])
        out += bytes(base - len(out))
        for s in segments:
            out += s + bytes(_pad(len(s)))
        return bytes(out)


def vh00(graph_fb: bytes, constants: bytes) -> bytes:
    """A Vulkan delegate blob: the 30-byte VH00 header, the VK00 graph, the constants."""
    fb_offset = 32
    bytes_offset = fb_offset + len(graph_fb) + _pad(len(graph_fb))
    header = (bytes(4) + vulkan.HEADER_MAGIC +
              struct.pack("<HIIIQ", vulkan.HEADER_SIZE, fb_offset, len(graph_fb), bytes_offset,
                          len(constants)))
    return (header + bytes(fb_offset - len(header)) + graph_fb +
            bytes(bytes_offset - fb_offset - len(graph_fb)) + constants)


def vulkan_id() -> bytes:
    from pte_webgpu.model.program_file import VULKAN_BACKEND_ID

    return VULKAN_BACKEND_ID.encode()
