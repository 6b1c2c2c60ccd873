"""``et_vk.rms_norm.default [in, weight, eps, out]``: a family of kernels, one chosen per
op from the row width, the row count and the adapter (shaders/rms_norm*.wgsl).

Variant names (``parse``): ``tree-64`` one workgroup of 64 per row with a halving tree
(the original design), ``tree4-256`` the same with vec4 loads and 256 lanes,
``tile4-16x256`` 16 lanes per row and 256 per workgroup (16 rows each), ``row4-64`` one
row per invocation in workgroups of 64 (no barrier), ``sg4-4`` one row per workgroup of 4
reduced with subgroupAdd (adapters with subgroups). A ``4`` after the kind means vec4
loads; on a width not divisible by 4 the same shape runs with scalar loads.

A suffix names where the rare row whose float32 sum of squares under- or overflows is
redone (snippets.wgsl rms_rescue): ``-tail`` (the default, no suffix) by the
row's first lane in a branch the row's other lanes leave by, so the common path is the
kernel without a rescue; ``-inline`` the first design (the first lane redoes it while
the others skip their stores); ``-split`` not in the kernel: it flags the row in a
per-row u32 buffer and a second dispatch redoes the flagged rows (and clears the flags).

Forcing a variant (tests, benchmarks): ``variants={"rms_norm": "tree-64"}`` in the
Runtime options, or ``PTE_WEBGPU_RMS_NORM=tree-64`` (ops/variants.py).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace

from ..errors import FormatError, UnsupportedError
from ..model.graph import TensorValue
from ..shaders.compose import Binding, Entry, Kernel, Uniform, fill
from . import cpu_reference as cpu
from . import sizes
from .args import number
from .common import floor_pow2, is_pow2
from .exec_ints import follow_actual_size
from .registry import define
from .variants import declare, traits_of

F32_EPS = 2.0 ** -23  # PyTorch's default eps for rms_norm (float32 machine epsilon)
SEED = "tree-64"  # the original kernel: kept as a variant

_NAME = re.compile(r"^(tree|tile|row|sg)(4?)-(\d+)(?:x(\d+))?(?:-(inline|tail|split))?$")
# rescue_mode (snippets.wgsl): where a rare row is redone.
RESCUE_MODES = {"inline": 0, "tail": 1, "split": 2}
DEFAULT_RESCUE = "tail"
RESCUE_WG = 64  # the split form's second dispatch: one invocation per row

PARAMS = Uniform(("num_rows", "u32"), ("width", "u32"), ("eps", "f32"))
# The scalar and the vec4 entry points each use one view of bindings 0-2.
# Binding 4: the split form's per-row flags (the other forms bind a 4-byte stand-in).
_BINDINGS = (Binding(0, "x"), Binding(1, "weight"), Binding(2, "y", "read_write"),
             Binding(0, "x4", type="elem4"), Binding(1, "weight4", type="elem4"),
             Binding(2, "y4", "read_write", "elem4"), Binding(4, "rescue_flags", "read_write", "u32"))
_RARE_ROW4 = fill("snippets", "rare_row4", rows="x4")  # rms_rescue's scale of a rare row
KERNELS = {
    "rms_norm": Kernel("rms_norm", _BINDINGS, PARAMS, uniform_binding=3, generated=_RARE_ROW4,
                       snippets=("bits", "nan_minmax", "flat_index", "tree", "rms_rescue"),
                       entries=(Entry("rescue", "rescue_flagged", "params.num_rows"),)),
    "rms_norm_subgroup": Kernel("rms_norm_subgroup", _BINDINGS, PARAMS, uniform_binding=3,
                                half=False, generated=_RARE_ROW4,
                                enables=("subgroups",), snippets=("bits", "rms_rescue"),
                                entries=(Entry("main", "row_scalar", "params.num_rows", "group", True),
                                         Entry("main_vec4", "row_vec4", "params.num_rows", "group",
                                               True))),
}


@dataclass(frozen=True)
class Variant:
    kind: str  # "tree" | "tile" | "row" | "sg"
    vec4: bool
    wg_size: int  # invocations per workgroup
    lanes: int  # invocations per row (wg_size for tree and sg, 1 for row)
    rescue: str = DEFAULT_RESCUE  # a key of RESCUE_MODES

    @property
    def name(self) -> str:
        v = "4" if self.vec4 else ""
        tail = "" if self.rescue == DEFAULT_RESCUE else f"-{self.rescue}"
        if self.kind == "tile":
            return f"tile{v}-{self.lanes}x{self.wg_size}{tail}"
        return f"{self.kind}{v}-{self.wg_size}{tail}"

    @property
    def shader(self) -> str:
        return "rms_norm_subgroup" if self.kind == "sg" else "rms_norm"

    @property
    def entry(self) -> str:
        return "main_vec4" if self.vec4 else "main"

    @property
    def constants(self) -> dict:
        mode = RESCUE_MODES[self.rescue]
        if self.kind == "sg":
            return {"wg_size": self.wg_size, "rescue_mode": mode}
        return {"wg_size": self.wg_size, "lanes": self.lanes, "rescue_mode": mode}

    @property
    def rows_per_group(self) -> int:
        return self.wg_size // self.lanes

    def workgroups(self, rows: int) -> int:
        return -(-rows // self.rows_per_group)

    def for_width(self, width: int) -> "Variant":
        """vec4 loads need whole vec4 rows: other widths load scalars, same shape."""
        return self if not self.vec4 or width % 4 == 0 else replace(self, vec4=False)


def parse(name: str) -> Variant:
    m = _NAME.match(name.strip())
    if not m:
        raise UnsupportedError(f"unknown rms_norm variant {name!r}; names look like tree-64, "
                               "tree4-256, tile4-16x256, row4-64, sg4-4, and may end in "
                               "-inline, -tail or -split")
    kind, vec, a, b = m.group(1), m.group(2) == "4", int(m.group(3)), m.group(4)
    rescue = m.group(5) or DEFAULT_RESCUE
    if kind == "tile":
        if b is None:
            raise UnsupportedError(f"rms_norm variant {name!r}: tile needs LANESxWG, "
                                   "e.g. tile4-16x256")
        lanes, wg = a, int(b)
    elif b is not None:
        raise UnsupportedError(f"rms_norm variant {name!r}: only tile takes LANESxWG")
    else:
        wg, lanes = a, (1 if kind == "row" else a)
    if not (is_pow2(wg) and is_pow2(lanes) and lanes <= wg):
        raise UnsupportedError(f"rms_norm variant {name!r}: sizes must be powers of two "
                               "with lanes <= workgroup size")
    return Variant(kind, vec, wg, lanes, rescue)


# --- adapters -------------------------------------------------------------------------
def supported(variant: Variant, adapter, **_) -> str | None:
    """Why ``variant`` cannot run on ``adapter`` (info or traits; None when it can)."""
    traits = traits_of(adapter)
    if variant.wg_size > traits.max_invocations:
        return (f"{variant.wg_size} invocations per workgroup exceed the adapter's "
                f"{traits.max_invocations}")
    if variant.kind == "sg" and not traits.subgroups:
        return "needs the subgroups feature (browser adapters only)"
    if variant.kind != "sg" and variant.wg_size * 4 > traits.workgroup_storage:
        return "workgroup storage too small"
    return None


def choose(adapter, rows: int, width: int) -> Variant:
    """The selection rule (measured: docs/performance.md).

    CPU adapters (SwiftShader, lavapipe) run a workgroup's invocations as a few SIMD
    lanes on one thread, and a barrier switches every invocation out and back: no
    barriers there. From 16 rows up, one row per invocation in workgroups of 16 (the
    rows spread over the adapter's threads); fewer rows: one row per subgroup-sized
    workgroup summed with subgroupAdd where the adapter has subgroups.
    GPUs: rows of at least 512 vec4s get one workgroup per row with a vec4 halving tree
    of 256 lanes (512 when there are at most 64 rows, to spread one row wider);
    narrower rows share a workgroup of 256 (tile), one lane per 2 vec4s of the row
    (at most 32).
    """
    vec = 4 if width % 4 == 0 else 1
    items = width // vec
    traits = traits_of(adapter)
    top = traits.max_invocations
    if traits.is_cpu:
        if rows < 16 and traits.subgroups:
            pick = Variant("sg", True, 4, 4)
        else:
            pick = Variant("row", True, min(16, top), 1)
    elif items >= 512:
        lanes = min(top, 512 if rows <= 64 else 256)
        pick = Variant("tree", True, lanes, lanes)
    else:
        lanes = max(1, min(32, floor_pow2(items // 2)))
        pick = Variant("tile", True, min(256, top), lanes)
    return pick.for_width(width)


def _measure(traits, width: int, **_) -> list[Variant]:
    """The seed, the chosen family's neighbours, the other shapes and the other rare-row
    forms (bench/)."""
    names = ["tree-64", "tree4-64", "tree4-128", "tree4-256", "tree4-512", "tree4-1024",
             "tile4-4x256", "tile4-8x256", "tile4-16x256", "tile4-32x256", "tile4-16x128",
             "row4-64", "sg4-32", "sg4-256",
             # the rare-row forms of the rule's two GPU picks
             "tree4-256-inline", "tree4-256-split", "tile4-8x256-inline", "tile4-8x256-split"]
    if traits.is_cpu:
        names = ["tree-64", "tree4-64", "tile4-4x64", "row4-16", "row4-64", "row-64",
                 "sg4-4", "sg-4"]
    return [parse(n).for_width(width) for n in names]


VARIANTS = declare("rms_norm", (SEED, "tree4-256", "tile4-16x256", "row4-64", "sg4-4"),
                   parse=parse,
                   doc="KINDn-LANES or tile-LANESxWG: tree, tile, row, sg; 4 = vec4 loads; "
                       "-inline/-tail/-split: where rare rows are redone",
                   choose=choose,
                   supported=supported, adapt=lambda v, width, **_: v.for_width(width),
                   measure=_measure)


def candidates(adapter, width: int) -> list[Variant]:
    """Variants worth measuring on this adapter (bench/), all runnable there."""
    return VARIANTS.candidates(adapter, width=width)


async def record(ctx, op, variant: Variant, bindings, rows: int, width: int, eps: float,
                 half: bool = False, rows_above: int = 0):
    """Record the rms_norm dispatches of ``variant`` (also used by bench/): one, or two
    for the split form; ``half``: the f16 form of the shader (tensors stored as f16). A
    dynamic output: run only where more than ``rows_above`` rows are actual (fewer are
    normalised by the linear reading them: ops/norm_linear.py)."""
    pipeline = await ctx.pipeline(KERNELS[variant.shader], variant.constants, variant.entry, half)
    params = ctx.uniform(PARAMS.pack(num_rows=rows, width=width, eps=eps), "rms_norm params")
    split = variant.rescue == "split"
    # Buffers start zeroed and the second dispatch clears every flag it finds set, so the
    # flags are all zero again at the start of each run.
    flags = ctx.resources.buffer(4 * rows if split else 4, f"{ctx.where(op)} rescue flags")
    every = list(bindings) + [(3, params), (4, flags)]
    out_id = dict(bindings)[2]

    def rows_of(n: int) -> int:  # the rows holding n elements (none at or below rows_above)
        r = -(-n // width)
        return r if r > rows_above else 0

    ctx.dispatch(op, pipeline, every, ctx.grid(variant.workgroups(rows)))
    # A dynamic output: each dispatch covers only the actual rows at execute (both the
    # same rows, so flags are set and cleared over the same range).
    follow_actual_size(ctx, out_id, lambda n: variant.workgroups(rows_of(n)))
    if split:
        again = await ctx.pipeline(KERNELS["rms_norm"], {"wg_size": RESCUE_WG, "lanes": 1},
                                   "rescue", half)
        ctx.dispatch(op, again, every, ctx.grid(-(-rows // RESCUE_WG)))
        follow_actual_size(ctx, out_id, lambda n: -(-rows_of(n) // RESCUE_WG))


async def build(ctx, op):
    x_id, w_id, eps_id, out_id = ctx.args(op, 4)
    x, w, out = ctx.float_tensor(x_id, op), ctx.float_tensor(w_id, op), ctx.float_tensor(out_id, op)
    if not x.shape or x.numel == 0:
        raise UnsupportedError(f"{op.name}: input has no elements (shape {list(x.shape)})")
    width = x.shape[-1]
    rows = x.numel // width
    if w.numel < width:
        raise FormatError(f"{op.name}: weight has {w.numel} elements, the row width is {width}",
                          field=f"value {w_id}")
    if out.numel != x.numel:
        raise FormatError(f"{op.name}: output has {out.numel} elements, input {x.numel}",
                          field=f"value {out_id}")
    await pick_and_record(ctx, op, (x_id, w_id, out_id), rows, width,
                          ctx.float_scalar(eps_id, F32_EPS))


async def pick_and_record(ctx, op, ids, rows: int, width: int, eps: float,
                          rows_above: int = 0) -> None:
    """The chosen variant for rows x width, recorded over value ids (x, weight, out)."""
    half = ctx.half(ids[0])
    traits = ctx.device.info.traits
    if half:  # the subgroup shader has no f16 form: choose among the others
        traits = replace(traits, subgroups=False)
    variant = VARIANTS.pick(ctx, op, traits=traits, rows=rows, width=width)
    await record(ctx, op, variant, list(zip((0, 1, 2), ids)), rows, width, eps, half,
                 rows_above)


def choices(graph, op) -> dict[str, str]:
    """The variant each typical adapter would run for this op (shown by inspect)."""
    x = graph.values[op.args[0]] if len(op.args) == 4 else None
    if not isinstance(x, TensorValue) or not x.shape or not x.shape[-1]:
        return {}  # malformed op: inspect shows it, the build refuses it
    return VARIANTS.typical(rows=x.numel // x.shape[-1], width=x.shape[-1])


def rms_norm(x: cpu.Array, weight: cpu.Array, eps: float) -> list:
    """The CPU reference on arrays (also tests' entry point)."""
    width = x.shape[-1] if x.shape else 1
    if len(weight.values) < width:
        raise FormatError(f"rms_norm: weight has {len(weight.values)} elements, "
                          f"the row width is {width}")
    w, out = weight.values, []
    eps = cpu.round_one(eps, "f")  # as torch's float32 (beyond its range: +-inf)
    for start in range(0, len(x.values), width):
        row = x.values[start:start + width]
        # The exact mean square (float64), as the kernels' rescaled pass for rows whose
        # float32 sum under- or overflows (where torch's float32 sum gives inf or zeros).
        mean = math.fsum(v * v for v in row) / width + eps
        scale = math.nan if not mean >= 0 else (1.0 / math.sqrt(mean) if mean else math.inf)
        out += [v * scale * w[k] for k, v in enumerate(row)]
    return out


def reference(read, values, args):
    return rms_norm(read(args[0]), read(args[1]), number(values[args[2]], F32_EPS))


define("et_vk.rms_norm.default", build, reference, 4, half=True, choices=choices,
       sizes=sizes.same_as_first)
