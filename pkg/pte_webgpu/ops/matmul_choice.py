"""The matmul family's variants and the rule that picks one per op (ops/matmul.py
records them; docs/performance.md has the measurements).

- ``gemv4-WGxC[xD]``: matrix-vector for decode, up to 4 rows per workgroup of WG lanes
  that sweep K together (a long K is split across them), C (1, 2 or 4) output columns
  each, D loads in flight per lane and column (2 when not named); lane sums meet in a
  halving tree in workgroup memory. ``gemvsg4-WGxC``: the same summed with subgroupAdd
  (adapters with subgroups; no barrier when WG fits in one subgroup). ``gemv8``/
  ``gemvsg8``: float16 weights in 16-byte loads of 8 halves (K % 8 == 0; float32
  programs load vec4s, already 16 bytes). A suffix ``gG``: G column groups per
  workgroup, WG / G lanes each (a short K: fewer, fuller workgroups).
- ``mm4-TWxTK``: tiled matrix-matrix for prefill, TW x TW lanes per (8 TW)² output tile,
  8 x 8 outputs per lane in registers, K in steps of TK through workgroup memory. A
  suffix ``sS`` (split K): each tile's K cut into S spans, a workgroup each, whose partial
  sums a second dispatch adds (few tiles: a narrow N at ~1000 rows).
- ``tiled``: the original (4 tw)² tiles, 4 x 4 per lane.
- ``dot``: one output per invocation, no workgroup memory and no barrier: CPU adapters,
  where a barrier costs more than the reuse.

A ``4`` after the kind means vec4 loads; when K % 4 != 0 the same shape loads scalars.
Forcing a variant (tests, benchmarks): ``variants={"matmul": NAME}`` in the Runtime
options, else the environment variable ``PTE_WEBGPU_MATMUL`` (ops/variants.py). The
family's shape: m, n, k (the [M, K] x [N, K] product) and half (float16 weights).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..errors import UnsupportedError
from . import split_k
from .common import floor_pow2, is_pow2
from .variants import declare, traits_of

GEMV_COLS = (1, 2, 4)  # columns per gemv workgroup (shaders/matmul_gemv.wgsl)
GEMV_MAX_ROWS = 4  # rows per gemv workgroup (the vec4 of sums)
GEMV_DEPTHS = (1, 2, 4, 8)  # loads in flight per lane and column
DECODE_ROWS = 8  # up to this many rows the matrix-vector form is chosen (CPU adapters)
# On GPUs up to this many: at 16-256 rows of SmolLM2's shapes (K, N of 192-1536) the gemv
# form (4 rows per workgroup, the weight read M/4 times, mostly from L2) took 8-44 us on
# the H200 where the tiles took 90-240 us: their few workgroups run the K loop serially.
GPU_GEMV_ROWS = 256
_NAME = re.compile(r"^(gemv|gemvsg|mm)([48]?)-(\d+)x(\d+)(?:x(\d+))?(?:g(\d+))?(?:s(\d+))?$")
MAX_SPLITS = 8  # spans of K per tile
# Split K until the tiles' lanes reach this many (~16 warps on each of an H100's 132 SMs;
# WebGPU does not tell the count), each span keeping MIN_SPAN_K of K at least: at 1024
# rows (H100, session 26) K = 576 ran faster whole (576 x 1536: 99 us against 131 in 4
# spans, prefetching) and K = 1536 in 4 spans (120 us) than in 8 (143); the 1020-token
# prefill 41.7 -> 40.1 ms.
SPLIT_LANES = 65536
MIN_SPAN_K = 384
SPLIT_BYTES = 1 << 25  # the spans' partial sums at most (one scratch buffer)


@dataclass(frozen=True)
class Variant:
    kind: str  # "gemv" | "gemvsg" | "mm" | "tiled" | "dot"
    vec4: bool = False
    a: int = 0  # gemv: lanes per workgroup; mm: lanes per side
    b: int = 0  # gemv: columns per workgroup; mm: K per step
    depth: int = 2  # gemv: loads in flight per lane and column
    packed: bool = False  # gemv: f16 weights in 16-byte loads (implies vec4)
    groups: int = 1  # gemv: column groups per workgroup
    splits: int = 1  # mm: spans of K per tile, a workgroup each (split K)

    @property
    def name(self) -> str:
        if self.kind in ("tiled", "dot"):
            return self.kind
        width = "8" if self.packed else "4" if self.vec4 else ""
        depth = f"x{self.depth}" if self.depth != 2 else ""
        groups = f"g{self.groups}" if self.groups > 1 else ""
        splits = f"s{self.splits}" if self.splits > 1 else ""
        return f"{self.kind}{width}-{self.a}x{self.b}{depth}{groups}{splits}"

    def for_k(self, k: int) -> "Variant":
        """Packed loads need K % 8 == 0, vec4 loads K % 4 == 0: other K load narrower,
        same shape."""
        if self.packed and k % 8:
            return replace(self, packed=False).for_k(k)
        return self if not self.vec4 or k % 4 == 0 else replace(self, vec4=False)

    def for_dtype(self, half: bool) -> "Variant":
        """Packed loads are for f16 weights: f32 ones already load 16 bytes as vec4s."""
        return replace(self, packed=False) if self.packed and not half else self

    @property
    def entry(self) -> str:
        return "main_packed" if self.packed else "main_vec4" if self.vec4 else "main"


def parse(name: str) -> Variant:
    name = name.strip()
    if name in ("tiled", "dot"):
        return Variant(name)
    m = _NAME.match(name)
    if not m:
        raise UnsupportedError(f"matmul variant {name!r}: names look like gemv4-64x4, "
                               "gemvsg4-32x4, mm4-16x8, mm4-8x16s4, tiled, dot")
    kind, width, depth, groups, splits = (m.group(i) for i in (1, 2, 5, 6, 7))
    if kind == "mm" and (width == "8" or depth or groups):
        raise UnsupportedError(f"matmul variant {name!r}: tiles are mm4-TWxTK[sS] or "
                               "mm-TWxTK[sS]")
    if splits and (kind != "mm" or not 1 <= int(splits) <= MAX_SPLITS):
        raise UnsupportedError(f"matmul variant {name!r}: K splits (sS) are for mm tiles, "
                               f"S from 1 to {MAX_SPLITS}")
    v = Variant(kind, width != "", int(m.group(3)), int(m.group(4)), int(depth or 2),
                width == "8", int(groups or 1), int(splits or 1))
    if v.depth not in GEMV_DEPTHS:
        raise UnsupportedError(f"matmul variant {name!r}: {GEMV_DEPTHS} loads in flight")
    if kind != "mm" and (not is_pow2(v.groups) or v.a // v.groups < v.b):
        raise UnsupportedError(f"matmul variant {name!r}: column groups: a power of two, "
                               "each with at least as many lanes as columns")
    if not is_pow2(v.a):
        raise UnsupportedError(f"matmul variant {name!r}: {v.a} lanes: a power of two")
    if v.kind == "mm" and (v.b < 4 or v.b % 4):
        raise UnsupportedError(f"matmul variant {name!r}: K per step must be a multiple of 4")
    if v.kind != "mm" and v.b not in GEMV_COLS:
        raise UnsupportedError(f"matmul variant {name!r}: {GEMV_COLS} columns")
    return v


# --- adapters -------------------------------------------------------------------------
def is_cpu(traits) -> bool:
    """Whether the rule takes the CPU adapters' forms (tests patch it to take lavapipe
    for a GPU)."""
    return traits.is_cpu


def supported(v: Variant, adapter, **_) -> str | None:
    """Why ``v`` cannot run on ``adapter`` (info or traits; None when it can)."""
    traits = traits_of(adapter)
    top = traits.max_invocations
    lanes = v.a * v.a if v.kind == "mm" else v.a
    if v.kind in ("gemv", "gemvsg", "mm") and lanes > top:
        return f"{lanes} invocations per workgroup exceed the adapter's {top}"
    if v.kind in ("gemv", "gemvsg") and 16 * v.a * v.b > traits.workgroup_storage:
        return "workgroup storage too small"
    if v.kind == "mm" and 64 * v.a * v.b > traits.workgroup_storage:
        return "workgroup storage too small"
    if v.kind == "gemvsg" and not traits.subgroup_builtins:
        return "needs subgroups"
    return None


def choose(adapter, m: int, n: int, k: int, half: bool = False) -> Variant:
    """The selection rule (measured on an H200, native Vulkan: docs/performance.md).

    CPU adapters: ``_choose_cpu``. GPUs, up to GPU_GEMV_ROWS rows: matrix-vector in
    workgroups of 32 lanes (one subgroup on NVIDIA: subgroup sums need no barrier; wider
    workgroups were slower at every decode shape measured), 4 columns each from N =
    16384 or from 33 rows, 2 from N = 1024, else 1; subgroup sums where the adapter has
    them. One row (decode): float16 weights in 16-byte loads; float32 ones from K = 2048
    4 loads in flight per lane and column; a short K against a wide N (the lm head) in column
    groups, 2 (float32) or 4 (float16) per workgroup. More rows: the 8 x 8-per-lane
    tiles, 128 wide when that gives at least 128 tiles, else 64, K in steps of 16 (8
    where workgroup storage is short), K split where the tiles are few (``k_splits``).
    """
    traits = traits_of(adapter)
    if is_cpu(traits):
        return _choose_cpu(traits, m, k)
    top = traits.max_invocations
    if m <= GPU_GEMV_ROWS:
        cols = 4 if n >= 16384 or m > 32 else 2 if n >= 1024 else 1
        kind = "gemvsg" if traits.subgroup_builtins else "gemv"
        pick = Variant(kind, True, min(32, floor_pow2(top)), cols)
        if m == 1:
            # 4 loads in flight: 4096 x 4096 float32 0.77x -> 0.81x the copy kernel; at
            # SmolLM2's K of 576 and 1536 ~10% slower in the model (H200)
            pick = replace(pick, packed=half, depth=4 if k >= 2048 and not half else 2)
            if k <= 1024 and n >= 16384:
                pick = replace(pick, depth=2, groups=min(4 if half else 2, pick.a // cols))
        while pick.b > 1 and supported(pick, traits):
            pick = replace(pick, b=pick.b // 2)
    else:
        tw = 16 if -(-m // 128) * -(-n // 128) >= 128 else 8
        pick = Variant("tiled")
        for t, step in ((tw, 16), (tw, 8), (8, 16), (8, 8)):
            v = Variant("mm", True, t, step)
            if supported(v, traits) is None:
                pick = v
                break
        if pick.kind == "mm":
            pick = replace(pick, splits=k_splits(m, n, k, pick))
    return pick.for_k(k)


def k_splits(m: int, n: int, k: int, v: Variant) -> int:
    """Spans of K per tile of ``v`` at M x N x K: doubled while the tiles' lanes are fewer
    than SPLIT_LANES and each span keeps MIN_SPAN_K. (At 1024 rows 64-wide tiles give a
    576-column product 144 workgroups of 64 lanes, about one per SM of an H100, each
    running the whole K loop; 256 x 1536 x 576 took 240 µs so on the H200, torch 39.)"""
    tiles = -(-m // (8 * v.a)) * -(-n // (8 * v.a))
    return split_k.count(tiles * v.a * v.a, k, goal=SPLIT_LANES, min_span=MIN_SPAN_K,
                         most=MAX_SPLITS, bytes_per_span=4 * m * n, max_bytes=SPLIT_BYTES)


def _choose_cpu(traits, m: int, k: int) -> Variant:
    """CPU adapters (lavapipe, SwiftShader) run a workgroup's lanes as SIMD vectors: a
    matrix-vector workgroup as wide as one vector (8 lanes where the adapter may run
    subgroups of 8 or more, else 4) sums with subgroupAdd and no barrier; more rows, 8 x 8
    tiles. Measured against ``dot`` (docs/performance.md): 1.5-2.3x faster at decode
    shapes on lavapipe, 1-2x on SwiftShader, 3-7x at 37-row prefill on lavapipe."""
    if m <= DECODE_ROWS:
        sizes = traits.subgroup_sizes
        lanes = 8 if sizes and sizes[1] >= 8 else 4
        pick = Variant("gemvsg" if traits.subgroup_builtins else "gemv", True, lanes, 4)
    else:
        pick = Variant("mm", True, 8, 8)
    return (pick if supported(pick, traits) is None else Variant("dot")).for_k(k)


def _measure(traits, m: int, k: int, half: bool = False, **_) -> list[Variant]:
    """Variants worth measuring for M rows (bench/)."""
    names = []
    if m <= (DECODE_ROWS if is_cpu(traits) else GPU_GEMV_ROWS):
        names += [f"gemv4-{wg}x{c}" for wg in (32, 64, 128, 256) for c in GEMV_COLS]
        names += [f"gemvsg4-{wg}x{c}" for wg in (32, 64, 128) for c in GEMV_COLS]
        # one subgroup per workgroup, more loads in flight, f16 in 16-byte loads
        names += [f"gemv{sg}{w}-32x{c}x{d}" for sg in ("", "sg") for w in (4, 8)
                  for c in GEMV_COLS for d in (2, 4)]
        # several column groups per workgroup (short K)
        names += [f"gemvsg{w}-{wg}x{c}g{g}" for w in (4, 8) for wg in (32, 64, 128)
                  for c in (2, 4) for g in (2, 4, 8) if wg // g >= 8]
    if m > DECODE_ROWS:
        names += ["mm4-16x8", "mm4-16x16", "mm4-16x4", "mm4-8x8", "mm4-8x16", "tiled"]
        if not is_cpu(traits):
            names += [f"mm4-{t}x16s{s}" for t in (8, 16) for s in (2, 4, 8)]
    if is_cpu(traits):
        names += ["dot"] + ([f"gemv{sg}4-{wg}x{c}" for sg in ("", "sg") for wg in (4, 8)
                             for c in (1, 4)] if m <= DECODE_ROWS else [])
    return [parse(name).for_k(k).for_dtype(half) for name in names]


VARIANTS = declare("matmul", ("gemv4-32x1", "gemvsg4-32x4", "mm4-16x8", "tiled", "dot"),
                   parse=parse, doc="gemv[sg]4-LANESxCOLS: matrix-vector (decode); "
                   "mm4-TWxTK: 8x8-per-lane tiles (prefill); tiled: 32x32 tiles; dot: one "
                   "dot product per output (CPU adapters)",
                   choose=choose,
                   supported=supported, adapt=lambda v, k, **_: v.for_k(k),
                   measure=_measure)


def candidates(adapter, m: int, k: int, half: bool = False) -> list[Variant]:
    """Variants worth measuring for M rows (bench/), all runnable here."""
    return VARIANTS.candidates(adapter, m=m, k=k, half=half)


def row_forms(adapter, m: int, n: int, k: int, v: Variant,
              half: bool = False) -> list[tuple[int, Variant]]:
    """(up to how many rows, variant) for a dynamic M: ``v``, the bound's pick, first (it
    serves any row count), then the pick of each smaller row limit that differs."""
    forms = [(m, v)]
    for limit in (GPU_GEMV_ROWS, DECODE_ROWS, 1):
        if limit < m:
            pick = choose(adapter, limit, n, k, half)
            if pick == forms[-1][1]:
                forms[-1] = (forms[-1][0], pick)
            else:
                forms.append((limit, pick))
    return forms
