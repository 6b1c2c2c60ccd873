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
WIDE_LANES = 32  # the wide form's workgroup: one subgroup on NVIDIA


@dataclass(frozen=True)
class Variant:
    kind: str  # "dot" | "gemv" | "gemvsg" | "wide" | "tiled"
    lanes: int = 0  # gemv: lanes per workgroup; wide: lanes per column group
    cols: int = 1  # wide: columns per column group

    @property
    def name(self) -> str:
        if self.kind == "wide":
            return f"wide-{self.lanes}-{self.cols}"
        return f"{self.kind}-{self.lanes}" if self.kind.startswith("gemv") else self.kind


def parse(name: str) -> Variant:
    name = name.strip()
    if name in ("dot", "tiled"):
        return Variant(name)
    wide = _WIDE.match(name)
    if wide and is_pow2(int(wide.group(1))) and int(wide.group(1)) <= WIDE_LANES:
        return Variant("wide", int(wide.group(1)), int(wide.group(2)))
    m = _NAME.match(name)
    if not m or not is_pow2(int(m.group(2))) or not 1 <= int(m.group(2)) <= 1024:
        raise UnsupportedError(f"linear_q4 variant {name!r}: names look like dot, gemv-64, "
                               "gemvsg-32, wide-8-2, tiled (gemv lanes: a power of two up to "
                               "1024; wide-S-C: S lanes a power of two up to 32, C columns "
                               "1 to 4)")
    return Variant(m.group(1), int(m.group(2)))


def supported(v: Variant, adapter, m: int = 1, k: int = 0, group: int = 0,
              constant_scales: bool = True, **_) -> str | None:
    """Why ``v`` cannot run on ``adapter`` (info or traits; None when it can) at K = ``k``
    with groups of ``group`` (0: not known, as when listing variants); the wide form relays
    the scales at load, so it needs ``constant_scales``."""
    traits = traits_of(adapter)
    if v.kind == "wide":
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
    """CPU adapters: up to CPU_GEMV_ROWS rows ``dot`` (lavapipe, 576 x 1536: dot 1.8 ms,
    gemvsg-8 7.9 ms, gemvsg-4 7.6 ms: a workgroup per column costs more there than the
    sums save); more rows, the tiles. GPUs: up to
    GPU_GEMV_ROWS rows, gemvsg-32 (one subgroup on NVIDIA, no barrier) or gemv-64; more,
    the tiles."""
    traits = traits_of(adapter)
    if traits.is_cpu:
        pick = Variant("tiled") if m > CPU_GEMV_ROWS else Variant("dot")
    elif m > GPU_GEMV_ROWS:
        pick = Variant("tiled")
    else:
        pick = Variant("gemvsg", 32) if traits.subgroup_builtins else Variant("gemv", 64)
        wide = wide_form(n, k, half)
        if supported(wide, traits, m=m, k=k, group=group or 32,
                     constant_scales=constant_scales) is None:
            pick = wide
    return pick if supported(pick, traits, m=m, k=k, group=group) is None else Variant("dot")


def wide_form(n: int, k: int, half: bool) -> Variant:
    """The wide form for one row of [K] x [N, K], from the H200 sweep of every wide-S-C
    (docs/bench/linear_q4_h200.json): many columns (an lm head) want short column groups
    with their loads in flight, a long K a whole subgroup per column pair, the rest one
    column per subgroup."""
    if n >= 16384:
        return Variant("wide", 4, 1 if half else 4)
    if k >= 2048:
        return Variant("wide", 32, 2)
    return Variant("wide", 32, 1)


def _measure(traits, m: int, **_) -> list[Variant]:
    names = ["dot", "tiled"] + [f"gemv{sg}-{wg}" for sg in ("", "sg")
                                for wg in (4, 8, 32, 64, 128, 256)]
    names += [f"wide-{s}-{c}" for s in (4, 8, 16, 32) for c in (1, 2, 4)]
    return [parse(n) for n in names]


VARIANTS = declare("linear_q4", ("dot", "gemv-64", "gemvsg-32", "tiled"), parse=parse,
                   doc="4-bit weight linears: dot (one output per invocation), "
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
