"""The 4-bit linears' kernel variants and the rule that picks one per op (ops/linear_q4.py
records them; shaders/linear_q4.wgsl has the forms).

- ``dot``: one output per invocation sweeping all of K: no workgroup memory, no barrier,
  no subgroups (CPU adapters: SwiftShader, lavapipe).
- ``gemv-WG``: matrix-vector for decode, one column and up to 4 rows per workgroup of WG
  lanes that sweep K together, one u32 load per 8 weights; the lanes' sums meet in a
  halving tree in workgroup memory.
- ``gemvsg-WG``: the same summed with subgroupAdd (adapters with subgroups; no barrier
  when one subgroup spans the workgroup).
- ``wide-S-C``: decode with 16-byte weight loads (32 weights each): a workgroup of 32
  lanes is 32 / S column groups of S lanes, each group C adjacent columns sharing the
  input's loads; sums by subgroupShuffleXor. Needs subgroups, K a multiple of 32 and a
  group that is a multiple of 8.
- ``keep-L-C-B``: decode with the input held in registers: a column's K split over L
  lanes (4 to 256; past 32, several subgroups), each holding its ceil(K / 32 / L) <= 4
  chunks of 32 inputs while the workgroup sweeps C columns (a multiple of B max(32, L) /
  L, up to 256), B (4 or 8) at once, one 16-byte weight load per column and chunk and no
  input load; sums by a transposed butterfly. Needs what ``wide`` needs.
- ``cols-C[-L]``: CPU adapters, up to CPU_GEMV_ROWS rows: C adjacent columns of one row
  per invocation, each 32-input chunk loaded once per subgroup and broadcast to its lanes,
  nibbles decoded in the float mantissa (shaders/linear_q4_parts.wgsl ``cols``); L lanes
  per workgroup (default: ``cols_lanes``). Needs subgroups of at least 4 lanes and a group
  that is a multiple of 8.
- ``tiled``: 32 x 32 outputs per workgroup of 64 lanes, 4 x 4 each, K in steps of 32
  through workgroup memory (prefill).

Forcing one: ``variants={"linear_q4": NAME}`` in the Runtime options, else the
environment variable ``PTE_WEBGPU_LINEAR_Q4`` (ops/variants.py). The family's shape:
m, n, k (the [M, K] x [N, K] product) and half (float16 activations).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UnsupportedError
from .common import is_pow2
from .variants import declare, traits_of

TILE_LANES = 64  # the tiled form's 8 x 8 lanes
TILE_STORAGE = 8192  # its two 32 x 32 f32 tiles
CPU_GEMV_ROWS = 8  # up to this many rows CPU adapters take a matrix-vector form
GPU_GEMV_ROWS = 32  # GPUs: each gemv workgroup reads its column's weights once per 4 rows
_NAME = re.compile(r"^(gemv|gemvsg)-(\d+)$")
_WIDE = re.compile(r"^wide-(\d+)-([1-4])$")
_KEEP = re.compile(r"^keep-(\d+)-(\d+)-([48])$")
_COLS = re.compile(r"^cols-(1|2|4|8|16|32)(?:-(4|8|16|32|64))?$")
COLS_WORKGROUPS = 16  # the cols form's workgroups per row at least, where lanes allow
WIDE_LANES = 32  # the wide form's workgroup: one subgroup on NVIDIA
KEEP_REPS = 4  # the keep form's chunks of 32 inputs per lane at most (128 registers)


@dataclass(frozen=True)
class Variant:
    kind: str  # "dot" | "gemv" | "gemvsg" | "wide" | "keep" | "cols" | "tiled"
    lanes: int = 0  # gemv: lanes per workgroup; wide: per column group; keep: per column
    cols: int = 1  # wide: columns per column group; keep: per workgroup; cols: per lane
    batch: int = 4  # keep: columns a lane sweeps at once

    @property
    def name(self) -> str:
        if self.kind == "keep":
            return f"keep-{self.lanes}-{self.cols}-{self.batch}"
        if self.kind == "wide":
            return f"wide-{self.lanes}-{self.cols}"
        if self.kind == "cols":
            return f"cols-{self.cols}" + (f"-{self.lanes}" if self.lanes else "")
        return f"{self.kind}-{self.lanes}" if self.kind.startswith("gemv") else self.kind


def parse(name: str) -> Variant:
    name = name.strip()
    if name in ("dot", "tiled"):
        return Variant(name)
    wide = _WIDE.match(name)
    if wide and is_pow2(int(wide.group(1))) and int(wide.group(1)) <= WIDE_LANES:
        return Variant("wide", int(wide.group(1)), int(wide.group(2)))
    keep = _KEEP.match(name)
    if keep:
        lanes, cols, batch = (int(keep.group(i)) for i in (1, 2, 3))
        if is_pow2(lanes) and 4 <= lanes <= 256 and is_pow2(cols) \
                and batch * max(WIDE_LANES, lanes) // lanes <= cols <= 256:
            return Variant("keep", lanes, cols, batch)
    cols = _COLS.match(name)
    if cols:
        return Variant("cols", int(cols.group(2) or 0), int(cols.group(1)))
    m = _NAME.match(name)
    if not m or not is_pow2(int(m.group(2))) or not 1 <= int(m.group(2)) <= 1024:
        raise UnsupportedError(f"linear_q4 variant {name!r}: names look like dot, gemv-64, "
                               "gemvsg-32, wide-8-2, keep-32-16-4, cols-8, tiled (gemv lanes: a power of "
                               "two up to 1024; wide-S-C: S lanes a power of two up to 32, C "
                               "columns 1 to 4; keep-L-C-B: L lanes a power of two 4 to 256, "
                               "B 4 or 8, C columns a power of two from B max(32, L) / L "
                               "to 256; cols-C[-L]: C 1, 2, 4, 8, 16 or 32, L lanes 4 to 64)")
    return Variant(m.group(1), int(m.group(2)))


def supported(v: Variant, adapter, m: int = 1, k: int = 0, group: int = 0,
              constant_scales: bool = True, **_) -> str | None:
    """Why ``v`` cannot run on ``adapter`` (info or traits; None when it can) at K = ``k``
    with groups of ``group`` (0: not known, as when listing variants); the wide form relays
    the scales at load, so it needs ``constant_scales``."""
    traits = traits_of(adapter)
    if v.kind == "cols":
        if not traits.subgroup_builtins or cols_share(traits) < 4:
            return "needs subgroups of at least 4 lanes"
        if group and group % 8:
            return "needs a group that is a multiple of 8"
        return None
    if v.kind in ("wide", "keep"):
        if v.kind == "keep" and k and keep_reps(v, k) > KEEP_REPS:
            return f"K = {k} is over {KEEP_REPS} chunks of 32 per lane of {v.lanes}"
        if v.kind == "keep" and max(WIDE_LANES, v.lanes) > traits.max_invocations:
            return f"{v.lanes} lanes exceed the adapter's {traits.max_invocations} invocations"
        if not constant_scales:
            return "needs constant scales (relaid by column at load)"
        if not traits.subgroup_builtins:
            return "needs subgroups"
        if m > 1:
            return "one row only (decode)"
        if (k and k % 32) or (group and group % 8):
            return "needs K a multiple of 32 and a group that is a multiple of 8"
        return None
    lanes = TILE_LANES if v.kind == "tiled" else v.lanes
    if lanes > traits.max_invocations:
        return f"{lanes} invocations per workgroup exceed the adapter's {traits.max_invocations}"
    storage = TILE_STORAGE if v.kind == "tiled" else 16 * v.lanes
    if storage > traits.workgroup_storage:
        return "workgroup storage too small"
    if v.kind == "gemvsg" and not traits.subgroup_builtins:
        return "needs subgroups"
    return None


def choose(adapter, m: int, n: int = 0, k: int = 0, half: bool = False,
           group: int = 0, constant_scales: bool = True) -> Variant:
    """CPU adapters: up to CPU_GEMV_ROWS rows ``cols_form`` where it runs, else ``dot``
    (lavapipe, 576 x 1536: dot 1.8 ms, gemvsg-8 7.9 ms, gemvsg-4 7.6 ms: a workgroup per
    column costs more there than the sums save); more rows, the tiles. GPUs: up to
    GPU_GEMV_ROWS rows, gemvsg-32 (one subgroup on NVIDIA, no barrier) or gemv-64, one row
    with subgroups ``decode_form``'s pick where it can run; more rows, the tiles."""
    traits = traits_of(adapter)
    if traits.is_cpu:
        pick = Variant("tiled") if m > CPU_GEMV_ROWS else cols_form(n)
        if pick.kind == "cols" and supported(pick, traits, k=k, group=group):
            pick = Variant("dot")
    elif m > GPU_GEMV_ROWS:
        pick = Variant("tiled")
    else:
        pick = Variant("gemvsg", 32) if traits.subgroup_builtins else Variant("gemv", 64)
        decode = decode_form(n, k, half)
        if m == 1 and traits.subgroup_builtins and supported(
                decode, traits, m=m, k=k, group=group or 32,
                constant_scales=constant_scales) is None:
            pick = decode
    return pick if supported(pick, traits, m=m, k=k, group=group) is None else Variant("dot")


def decode_form(n: int, k: int, half: bool) -> Variant:
    """The form for one row of [K] x [N, K] on a GPU with subgroups. Many columns (an lm
    head) want short column groups with their loads in flight (wide-4-C, the H200 sweep of
    every wide-S-C: docs/bench/linear_q4_h200.json). From the H100 sweep of 2026-12-06
    (docs/bench/linear_q4_h100_keep.json, the keep form added), each pick faster than the
    earlier one a dispatch per pass and no slower back to back: a long K and many columns the
    input held in registers by 4 subgroups per column (4096 x 4096: 18.8 -> 13.7 µs), a
    short K and many columns by one subgroup (576 x 3072: 9.4 -> 8.2 µs), a long K and few
    columns one column per workgroup of 64 lanes (1536 x 576: 9.0 -> 7.6 µs; the H200 sweep
    had it too, 8.8 -> 7.5), the rest one column per subgroup (576 x 960)."""
    if n >= 16384:
        return Variant("wide", 4, 1 if half else 4)
    if n >= 2048:
        return Variant("keep", 128, 8) if k >= 2048 else Variant("keep", 32, 4)
    if k >= 1024:
        return Variant("gemv", 64)
    return Variant("wide", 32, 1)


def cols_share(adapter) -> int:
    """Lanes of a subgroup whose input loads the cols form shares: 8 where every subgroup
    has 8 or more, 4 where 4 or more, else 0 (the form cannot run)."""
    sizes = traits_of(adapter).subgroup_sizes
    low = sizes[0] if sizes else 0
    return 8 if low >= 8 else 4 if low >= 4 else 0


def cols_form(n: int) -> Variant:
    """The cols form for N columns: 32 per lane from 2048 columns, else 16 (fewer lanes
    would leave cores idle). SwiftShader, ms: 1152 x 49152 dot 235, cols-8 62, cols-16 58,
    cols-32 50; 576 x 3072 cols-16 1.69, cols-32 1.51; 1536 x 576 cols-16 0.90, cols-32
    0.98."""
    return Variant("cols", cols=32 if n >= 2048 else 16)


def cols_lanes(v: Variant, n: int, share: int) -> int:
    """The cols form's workgroup: v.lanes, else the most lanes (4 to 32, at least
    ``share``) that still give COLS_WORKGROUPS workgroups per row, so that a short row
    still spreads over the cores (SwiftShader, 1 x 1536 x 576: cols-16-4 0.91 ms,
    cols-16-32 1.54 ms; 1 x 1152 x 49152 no slower with 32)."""
    if v.lanes:
        return max(v.lanes, share)
    lanes = 32
    while lanes > max(4, share) and -(-n // v.cols) < COLS_WORKGROUPS * lanes:
        lanes //= 2
    return lanes


def keep_reps(v: Variant, k: int) -> int:
    """The chunks of 32 inputs each lane of the keep form ``v`` holds at K = ``k``."""
    return max(1, -(-(k // 32) // v.lanes))


def keep_parts(v: Variant) -> int:
    """The keep form's sums in workgroup memory: one per subgroup of 32 and column."""
    return max(1, v.lanes // WIDE_LANES) * v.cols


def _measure(traits, m: int, **_) -> list[Variant]:
    names = ["dot", "tiled"] + [f"cols-{c}-{wg}" for c in (4, 8, 16, 32)
                                for wg in (4, 8, 16, 32)]
    names += [f"gemv{sg}-{wg}" for sg in ("", "sg")
                                for wg in (4, 8, 32, 64, 128, 256)]
    names += [f"wide-{s}-{c}" for s in (4, 8, 16, 32) for c in (1, 2, 4)]
    names += [f"keep-{lanes}-{c}-{b}" for lanes in (8, 16, 32, 64, 128) for b in (4, 8)
              for c in (4, 8, 16, 32, 64) if c >= b * max(WIDE_LANES, lanes) // lanes]
    return [parse(n) for n in names]


VARIANTS = declare("linear_q4", ("dot", "gemv-64", "gemvsg-32", "tiled"), parse=parse,
                   doc="4-bit weight linears: dot (one output per invocation), cols-C (C per "
                   "invocation, CPU adapters), "
                   "gemv[sg]-LANES (matrix-vector, decode), tiled (32x32 tiles, prefill)",
                   choose=choose, supported=supported, measure=_measure)


def row_forms(adapter, m: int, n: int, k: int, v: Variant, half: bool = False,
              group: int = 0, constant_scales: bool = True):
    """(up to how many rows, variant) for a dynamic M: ``v`` (the bound's pick) for any
    count, then the pick of each smaller row limit that differs (decode's)."""
    forms = [(m, v)]
    for limit in (GPU_GEMV_ROWS, CPU_GEMV_ROWS, 1):
        if limit < m:
            pick = choose(adapter, limit, n, k, half, group, constant_scales)
            if pick == forms[-1][1]:
                forms[-1] = (forms[-1][0], pick)
            else:
                forms.append((limit, pick))
    return forms
