"""Mutators over the real fixtures: each takes (rng, Target) and returns new file bytes.

A Target is one fixture's ``.pte`` plus its ``.ptd`` files and the positions worth hitting
(header fields, segment spans, the Vulkan blobs' VH00 fields), found once by parsing the
original, unmutated files.
"""

from __future__ import annotations

import json
import random
import struct
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

INTERESTING_U32 = (0, 1, 2, 3, 4, 7, 8, 16, 24, 29, 30, 31, 32, 40, 44, 127, 128, 255, 256,
                   0x7FFF, 0x8000, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFE,
                   0xFFFFFFFF)
INTERESTING_U64 = INTERESTING_U32 + (2**32, 2**63 - 1, 2**63, 2**64 - 1)
PTE_HEADER_FIELDS = ((0, 4), (4, 4), (8, 4), (12, 4), (16, 8), (24, 8), (32, 8))
PTD_HEADER_FIELDS = ((0, 4), (4, 4), (8, 4), (12, 4), (16, 8), (24, 8), (32, 8), (40, 8))
VH00_FIELDS = ((4, 4), (8, 2), (10, 4), (14, 4), (18, 4), (22, 8))


@dataclass
class Target:
    name: str
    pte: bytes
    ptds: list[tuple[str, bytes]]
    segments: list[tuple[int, int]] = field(default_factory=list)  # (file offset, size)
    vh00_starts: list[int] = field(default_factory=list)  # file offsets of delegate blobs
    fb_spans: list[tuple[int, int]] = field(default_factory=list)  # flatbuffer regions


def load_targets() -> list[Target]:
    from pte_webgpu import formats

    out = []
    for pte_path in sorted(FIXTURES.glob("*.pte")):
        summary = json.loads(pte_path.with_suffix(".json").read_text())
        ptds = [(Path(p).name, (FIXTURES / p).read_bytes()) for p in summary["ptd_files"]]
        pte = pte_path.read_bytes()
        program = formats.open_program(pte, ptds)
        t = Target(pte_path.stem, pte, ptds)
        t.segments = [(s.file_offset, s.size) for s in program.segments]
        size = program.header.program_size if program.header else len(pte)
        t.fb_spans.append((0, size))
        for plan in program.plans:
            for d in plan.delegates:
                if d.location == "segment":
                    start = program.segments[d.index].file_offset
                    t.vh00_starts.append(start)
                    h = d.graph.header
                    t.fb_spans.append((start + h.flatbuffer_offset, h.flatbuffer_size))
        out.append(t)
    return out


def _u(rng: random.Random, size: int) -> int:
    pool = INTERESTING_U64 if size == 8 else INTERESTING_U32
    choice = rng.random()
    if choice < 0.6:
        v = rng.choice(pool)
    elif choice < 0.8:
        v = rng.getrandbits(8 * size)
    else:
        v = rng.randrange(0, 1 << 17)  # plausible offsets/lengths near the file size
    return v & ((1 << (8 * size)) - 1)


def _put(data: bytearray, pos: int, size: int, value: int) -> None:
    if 0 <= pos and pos + size <= len(data):
        data[pos:pos + size] = value.to_bytes(size, "little")


def bit_flips(rng, data: bytes, t: Target) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 4, 16))):
        pos = rng.randrange(len(b))
        b[pos] ^= 1 << rng.randrange(8)
    return bytes(b)


def byte_sets(rng, data: bytes, t: Target) -> bytes:
    b = bytearray(data)
    for _ in range(rng.choice((1, 2, 8))):
        b[rng.randrange(len(b))] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))
    return bytes(b)


def truncate(rng, data: bytes, t: Target) -> bytes:
    r = rng.random()
    if r < 0.3:
        return data[:rng.randrange(0, min(len(data), 64))]
    if r < 0.5:
        return data[:len(data) - rng.randrange(1, 17)]
    return data[:rng.randrange(len(data))]


def header_field(rng, data: bytes, t: Target) -> bytes:
    b = bytearray(data)
    off, size = rng.choice(PTE_HEADER_FIELDS)
    _put(b, off, size, _u(rng, size))
    return bytes(b)


def vh00_field(rng, data: bytes, t: Target) -> bytes:
    if not t.vh00_starts:
        return header_field(rng, data, t)
    b = bytearray(data)
    start = rng.choice(t.vh00_starts)
    off, size = rng.choice(VH00_FIELDS)
    _put(b, start + off, size, _u(rng, size))
    return bytes(b)


def random_u32(rng, data: bytes, t: Target) -> bytes:
    """A u32 (aligned or not) inside a flatbuffer: offsets, lengths, vtable entries."""
    b = bytearray(data)
    start, size = rng.choice(t.fb_spans)
    for _ in range(rng.choice((1, 1, 2, 3))):
        pos = start + rng.randrange(max(1, size - 3))
        if rng.random() < 0.7:
            pos &= ~3
        width = rng.choice((4, 4, 4, 2, 8))
        _put(b, pos, width, _u(rng, 8 if width == 8 else 4) & ((1 << 8 * width) - 1))
    return bytes(b)


def small_delta(rng, data: bytes, t: Target) -> bytes:
    """Nudge a u32 inside a flatbuffer by a small amount (off-by-one offsets and lengths)."""
    b = bytearray(data)
    start, size = rng.choice(t.fb_spans)
    pos = (start + rng.randrange(max(1, size - 3))) & ~3
    if pos + 4 <= len(b):
        v = struct.unpack_from("<I", b, pos)[0]
        struct.pack_into("<I", b, pos, (v + rng.choice((-8, -4, -2, -1, 1, 2, 4, 8))) & 0xFFFFFFFF)
    return bytes(b)


def swap_segments(rng, data: bytes, t: Target) -> bytes:
    segs = [s for s in t.segments if s[1] > 0]
    if len(segs) < 2:
        return bit_flips(rng, data, t)
    (a_off, a_size), (b_off, b_size) = rng.sample(segs, 2)
    b = bytearray(data)
    n = min(a_size, b_size)
    b[a_off:a_off + n], b[b_off:b_off + n] = data[b_off:b_off + n], data[a_off:a_off + n]
    return bytes(b)


def duplicate_segment(rng, data: bytes, t: Target) -> bytes:
    segs = [s for s in t.segments if s[1] > 0]
    if not segs:
        return bit_flips(rng, data, t)
    src_off, src_size = rng.choice(segs)
    chunk = data[src_off:src_off + src_size]
    if rng.random() < 0.5 and len(segs) > 1:  # over another segment
        dst_off, dst_size = rng.choice(segs)
        b = bytearray(data)
        n = min(src_size, dst_size)
        b[dst_off:dst_off + n] = chunk[:n]
        return bytes(b)
    return data + chunk  # appended (the header still describes the old layout)


def insert_bytes(rng, data: bytes, t: Target) -> bytes:
    pos = rng.randrange(len(data) + 1)
    n = rng.choice((1, 2, 3, 4, 8, 16, 128))
    fill = bytes(rng.getrandbits(8) for _ in range(n)) if rng.random() < 0.5 else b"\0" * n
    return data[:pos] + fill + data[pos:]


def delete_bytes(rng, data: bytes, t: Target) -> bytes:
    pos = rng.randrange(len(data))
    n = rng.choice((1, 2, 3, 4, 8, 16, 128))
    return data[:pos] + data[pos + n:]


def ptd_header_field(rng, data: bytes, t: Target) -> bytes:
    b = bytearray(data)
    off, size = rng.choice(PTD_HEADER_FIELDS)
    _put(b, off, size, _u(rng, size))
    return bytes(b)


PTE_MUTATORS = {f.__name__: f for f in (
    bit_flips, byte_sets, truncate, header_field, vh00_field, random_u32, small_delta,
    swap_segments, duplicate_segment, insert_bytes, delete_bytes)}
# .ptd mutators get a Target whose spans describe the .ptd (see mutate)
PTD_MUTATORS = {f.__name__: f for f in (
    bit_flips, byte_sets, truncate, ptd_header_field, random_u32, small_delta, insert_bytes,
    delete_bytes)}


def mutate(rng: random.Random, t: Target):
    """One case: (description, pte bytes, ptd files). Stacks 1-3 mutations."""
    if t.ptds and rng.random() < 0.25:
        i = rng.randrange(len(t.ptds))
        name, data = t.ptds[i]
        fb_size = struct.unpack_from("<Q", data, 24)[0]
        pt = Target(name, data, [], fb_spans=[(0, 48 + fb_size)])
        ops = [rng.choice(list(PTD_MUTATORS)) for _ in range(rng.choice((1, 1, 2, 3)))]
        for op in ops:
            data = PTD_MUTATORS[op](rng, data, pt) if data else data
        files = list(t.ptds)
        files[i] = (name, data)
        return f"{t.name} ptd[{i}] " + "+".join(ops), t.pte, files
    ops = [rng.choice(list(PTE_MUTATORS)) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    data = t.pte
    for op in ops:
        if data:
            data = PTE_MUTATORS[op](rng, data, t)
    files = t.ptds if rng.random() < 0.9 else []
    return f"{t.name} pte " + "+".join(ops), data, files
