"""The conv family's variants and the rule that picks one per op (ops/conv.py records
them).

- ``direct``: one output per invocation, any convolution (transposed, any groups); no
  workgroup memory and no barrier: CPU adapters, and the general fallback.
- ``depthwise``: groups == Cin (one input channel per group, any channel multiplier), one
  output per invocation over kh x kw taps only.
- ``gemm[4]-TWxTK[kS]``: implicit GEMM, as the matmul family's mm4 tiles: each workgroup
  of TW x TW lanes computes (8 TW out channels) x (8 TW output pixels) of one batch item
  and group, 8 x 8 per lane in registers, K = Cin/groups * kh * kw in steps of TK through
  workgroup memory (weights along K, input patches gathered along pixels). ``4``: the
  weights staged in vec4 loads (K % 4 == 0; other K load scalars, same shape). ``kS``:
  K split into S ranges, one workgroup each, their partial sums added by a second pass
  (few tiles: small images, many channels).
- ``matmul``: a 1 x 1, stride 1, unpadded, ungrouped convolution of one batch item as
  the matmul family's [HW, Cin] x [Cout, Cin] product (ops/matmul.py ``record``; the
  matmul rule picks its form), the activation transposed first, the output stored
  transposed back to NCHW by the epilogue.

The family's shape: cin, cout, groups, k (kh * kw taps), pixels (output pixels per
batch item and channel), batch, pointwise (1 x 1, stride 1, no padding), transposed,
half. Forcing a variant: ``variants={"conv": NAME}`` or ``PTE_WEBGPU_CONV``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..errors import UnsupportedError
from . import split_k
from .variants import declare, traits_of

_GEMM = re.compile(r"^gemm(4?)-(\d+)x(\d+)(?:k(\d+))?$")
MAX_SPLITS = 64
GPU_WORKGROUPS = 128  # fewer 128-wide tiles than this: 64-wide ones (H200: 132 SMs)
# K splits: on the H200 (docs/bench/conv_h200.json) ResNet-18's 3x3 and 1x1 stride-2 convs ran
# fastest with 16 splits of as few as 2 K steps each (64x56x56: 44 us at k16, 69 at the k4 an
# 8-step minimum gave), so the splits' lanes go to about 64 x 1024 and a split runs at least
# 2 steps;
# the 7x7 layers still halved their time from k8 to k16 (512x7x7: 216 -> 117 us), so up to
# 64 (63 us), and the 1x1 stride-2 ones ran fastest at one K step a split (64x56x56 -> 128:
# 21.7 us at 4 splits of 1 step, 28.5 at 2 of 2; docs/bench/conv_h200_s9.json).
# Splits double while the lanes are fewer than GPU_LANES (ops/split_k.py count): the
# fewest reaching 32768 lanes, so at most 64 x 1024.
GPU_LANES = 32768
MIN_SPLIT_STEPS = 1  # K steps each split runs at least
# A 1x1 conv with fewer out channels than this takes the gemm tiles, not the matmul family:
# as [HW, Cin] x [Cout, Cin] its N is too narrow (MobileNetV2's 144 -> 24 at 56x56: matmul
# 47 us, gemm4-8x16k16 23 us; 576 -> 96 at 14x14: matmul 16 us, the tiles 37 us).
POINTWISE_MIN_COUT = 32
GEMM_MIN_ROWS = 8  # out channels per group below which the tiles are mostly empty


@dataclass(frozen=True)
class Variant:
    kind: str  # "direct" | "depthwise" | "gemm" | "matmul"
    vec4: bool = False  # gemm: weights in vec4 loads
    tw: int = 0  # gemm: lanes per side (tiles of 8 tw)
    tk: int = 0  # gemm: K per step
    splits: int = 1  # gemm: K split across this many workgroups (summed by a second pass)

    @property
    def name(self) -> str:
        if self.kind != "gemm":
            return self.kind
        split = f"k{self.splits}" if self.splits > 1 else ""
        return f"gemm{'4' if self.vec4 else ''}-{self.tw}x{self.tk}{split}"

    def for_k(self, k: int) -> "Variant":
        """vec4 weight loads need K % 4 == 0; other K load scalars, same tiles."""
        return replace(self, vec4=False) if self.vec4 and k % 4 else self


def parse(name: str) -> Variant:
    name = name.strip()
    if name in ("direct", "depthwise", "matmul"):
        return Variant(name)
    m = _GEMM.match(name)
    if not m:
        raise UnsupportedError(f"conv variant {name!r}: names look like direct, depthwise, "
                               "matmul, gemm4-16x8, gemm-8x8")
    v = Variant("gemm", m.group(1) == "4", int(m.group(2)), int(m.group(3)),
                int(m.group(4) or 1))
    if not 1 <= v.splits <= MAX_SPLITS:
        raise UnsupportedError(f"conv variant {name!r}: 1 to {MAX_SPLITS} K splits")
    if v.tw < 8 or v.tw % 8:
        raise UnsupportedError(f"conv variant {name!r}: lanes per side must be a multiple "
                               "of 8 (each lane stages one pixel column of the tile)")
    if v.tk < 4 or v.tk % 4:
        raise UnsupportedError(f"conv variant {name!r}: K per step must be a multiple of 4")
    return v


def _k_total(cin: int, groups: int, k: int) -> int:
    return cin // max(groups, 1) * k


def supported(v: Variant, adapter, cin: int = 1, cout: int = 1, groups: int = 1,
              batch: int = 1, pointwise: bool = False, transposed: bool = False,
              **_) -> str | None:
    """Why ``v`` cannot run this convolution on ``adapter`` (None when it can)."""
    traits = traits_of(adapter)
    if v.kind == "direct":
        return None
    if transposed:
        return "transposed convolutions run direct"
    if v.kind == "depthwise" and groups != cin:
        return f"not depthwise: groups {groups}, Cin {cin}"
    if v.kind == "matmul" and not (pointwise and groups == 1 and batch == 1):
        return "not a 1x1, stride 1, unpadded, ungrouped convolution of one batch item"
    if v.kind == "gemm":
        if v.tw * v.tw > traits.max_invocations:
            return (f"{v.tw * v.tw} invocations per workgroup exceed the adapter's "
                    f"{traits.max_invocations}")
        if 64 * v.tw * v.tk > traits.workgroup_storage:
            return "workgroup storage too small"
    return None


def choose(adapter, cin: int, cout: int, groups: int, k: int, pixels: int, batch: int = 1,
           pointwise: bool = False, transposed: bool = False, half: bool = False) -> Variant:
    """CPU adapters: depthwise or direct (no barriers). GPUs: transposed -> direct;
    depthwise -> depthwise; 1x1 of one batch item -> the matmul family; fewer than
    GEMM_MIN_ROWS out channels per group -> direct (1x1 with POINTWISE_MIN_COUT or more out
    channels: matmul); else implicit GEMM, 128-wide tiles
    when that gives at least GPU_WORKGROUPS workgroups, else 64, K in steps of 16 (8 where
    workgroup storage is short); when the tiles' lanes are fewer than GPU_LANES (ResNet's
    layers after the stem: 49 to 8 tiles of 64 lanes), K is split across up to MAX_SPLITS
    workgroups each, a power of two, each split at least MIN_SPLIT_STEPS steps
    (ops/split_k.py ``count``)."""
    traits = traits_of(adapter)
    shape = dict(cin=cin, cout=cout, groups=groups, batch=batch, pointwise=pointwise,
                 transposed=transposed)
    if transposed:
        return Variant("direct")
    if groups == cin and supported(Variant("depthwise"), traits, **shape) is None:
        return Variant("depthwise")
    if traits.is_cpu:
        return Variant("direct")
    rows = cout // groups
    if rows >= POINTWISE_MIN_COUT and supported(Variant("matmul"), traits, **shape) is None:
        return Variant("matmul")
    if rows < GEMM_MIN_ROWS:
        return Variant("direct")
    tiles = -(-rows // 128) * -(-pixels // 128) * batch * groups
    tw = 16 if tiles >= GPU_WORKGROUPS else 8
    total = _k_total(cin, groups, k)
    for t, step in ((tw, 16), (tw, 8), (8, 16), (8, 8)):
        v = Variant("gemm", True, t, step)
        if supported(v, traits, **shape) is None:
            small = -(-rows // (8 * t)) * -(-pixels // (8 * t)) * batch * groups
            splits = split_k.count(t * t * small, total, goal=GPU_LANES,
                                   min_span=MIN_SPLIT_STEPS * step, most=MAX_SPLITS)
            return replace(v, splits=splits).for_k(total)
    return Variant("direct")


def _measure(traits, cin: int = 1, groups: int = 1, k: int = 1, **_) -> list[Variant]:
    """Variants worth timing for one convolution (bench/)."""
    names = ["direct", "depthwise", "matmul", "gemm4-16x16", "gemm4-16x8", "gemm4-8x16",
             "gemm4-8x8", "gemm-16x8"] + [f"gemm4-8x16k{s}" for s in (2, 4, 8, 16, 32, 64)]
    return [parse(n).for_k(_k_total(cin, groups, k)) for n in names]


VARIANTS = declare("conv", ("direct", "depthwise", "matmul", "gemm4-16x16", "gemm4-8x8"),
                   parse=parse, doc="direct: one output per lane (any conv); depthwise: "
                   "groups == Cin; gemm[4]-TWxTK: implicit GEMM tiles; matmul: 1x1 as the "
                   "matmul family's product",
                   choose=choose, supported=supported,
                   adapt=lambda v, cin=1, groups=1, k=1, **_: v.for_k(_k_total(cin, groups, k)),
                   measure=_measure)
