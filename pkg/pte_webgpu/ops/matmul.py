"""Matrix products: ``aten.linear.default [input, weight, bias|Null, out]``.

input ``[..., K]`` (leading dims flattened into M), weight ``[N, K]``, bias ``[N]``;
out ``[..., N]`` = input · weightᵀ + bias, f32 accumulation in every form (float16
tensors are stored as f16). A family of kernels, one chosen per op from M, N, K and the
adapter, as rms_norm's is: the variants and the rule are ops/matmul_choice.py; this
module composes their shaders and records them. gemv (shaders/matmul_gemv.wgsl), mm4
(shaders/matmul_tile8.wgsl), tiled and dot (shaders/matmul.wgsl); the pieces composed
around them are sections of shaders/matmul_parts.wgsl. ``record`` takes any bindings
and sizes: bmm can reuse it.

Every form stores through an epilogue ``put(row, col, v)`` (``EPILOGUES``), so the same
forms serve ``pte_webgpu.fused_linear`` (ops/fused_linear.py, made by runtime/fusion.py):
linears that share an input as one product over their weights stacked at load, each
column range written to its own output, or a linear with the residual add after it
folded in.
"""

from __future__ import annotations

import math
import operator
from dataclasses import replace
from functools import cache
from math import prod

from ..errors import FormatError
from ..model.graph import Null, TensorValue
from ..shaders.compose import Binding, Entry, Kernel, Uniform, fill, sections
from . import matmul_choice, sizes, split_k
from .common import elementwise_workgroup, merge_consts
from .exec_ints import follow_actual_size
from .fused_elementwise import GATED_MATH, chain_function

from .matmul_choice import DECODE_ROWS, GEMV_MAX_ROWS, VARIANTS, Variant, row_forms
from .registry import define

PREFETCH_VEC4S = 4  # mm4 tiles: a lane's prefetched vec4s per operand (shaders/matmul_tile8.wgsl)
MAX_THREADS_PER_SIDE = 8  # tiled: 8 x 8 invocations, 32 x 32 outputs per workgroup
_PARTS = "matmul_parts"  # shaders/matmul_parts.wgsl

PARAMS = Uniform(("m", "u32"), ("n", "u32"), ("k", "u32"), ("has_bias", "u32"),
                 ("tiles_n", "u32"),  # workgroups across N
                 ("tiles", "u32"),  # workgroups in all
                 ("n0", "u32"), ("n1", "u32"),  # split epilogues: where out1, out2 begin
                 ("eps", "f32"),  # the norm prologue's (ops/norm_linear.py)
                 ("splits", "u32"), ("k_span", "u32"))  # mm tiles: spans of K (ops/split_k.py)
# Bindings 0-2 in two views each (entry points main: scalars, main_vec4: vec4s).
# Without a bias the weight stands in for binding 4; the shader never reads it.
_BINDINGS = (Binding(0, "input"), Binding(1, "weight"), Binding(2, "out", "read_write"),
             Binding(4, "bias"), Binding(0, "input4", type="elem4"),
             Binding(1, "weight4", type="elem4"), Binding(1, "weight8", type="vec4<u32>"))

# Epilogues: `put(row, col, v)` stores output (row, col) = v (bias added); each is the
# section put[_NAME] of matmul_parts.wgsl, with the bindings it adds. "" one output;
# "split2"/"split3": columns [0, n0), [n0, n1), [n1, n) go to out, out1, out2 (linears
# sharing an input, their weights stacked: one dispatch); "residual": out = resid + v,
# rounded as the unfused linear then add.Tensor round (f32(elem(v))), the add's order kept;
# "conv": [HW, Cin] x [Cout, Cin] stored as NCHW [Cout, HW], clamped (n0, n1: f32 bits);
# "conv_resid": the same with a residual added before the clamp (conv_parts' `finish`).
EPILOGUES = {
    "": (),
    "split2": (Binding(5, "out1", "read_write"),),
    "split3": (Binding(5, "out1", "read_write"), Binding(6, "out2", "read_write")),
    "residual": (Binding(5, "resid"),),
    "conv": (),  # a 1x1 convolution (ops/conv.py): out[col, row], clamped to [n0, n1]
    "conv_resid": (Binding(5, "resid"),),
}


# The input prologues' extra binding (gemv forms): RMSNorm's weight (ops/norm_linear.py),
# or the gated chain's second input, the input (binding 0) its first (ops/gated_linear.py).
NORM_BINDINGS = (Binding(7, "gamma4", type="elem4"),)
GATE_BINDINGS = (Binding(7, "up4", type="elem4"),)
MERGE_BINDINGS = (Binding(7, "parts", type="f32"),)  # the split attention's (attention_merge)
SPLIT_BINDINGS = (Binding(8, "kparts", "read_write", type="f32"),)  # split K's partial sums


def _with_epilogue(name: str, epilogue: str, generated: str = "", norm: bool = False,
                   gate: tuple = (), merge: tuple = (), bindings: tuple = (), **kw) -> Kernel:
    put = sections(_PARTS)["put" + (f"_{epilogue}" if epilogue else "")]
    if epilogue.startswith("conv") or norm or merge:  # bits: NaN tests, exact powers of two
        kw["snippets"] = tuple(kw.get("snippets", ())) + ("bits",) + (
            ("nan_minmax",) if epilogue.startswith("conv") or merge else ()) + (
            ("attention_merge",) if merge else ())
    return Kernel(kw.pop("body", name), _BINDINGS + EPILOGUES[epilogue]
                  + (NORM_BINDINGS if norm else ()) + (GATE_BINDINGS if gate else ())
                  + (MERGE_BINDINGS if merge else ()) + bindings, PARAMS,
                  uniform_binding=3, generated=generated + put,
                  name=name + (f"_{epilogue}" if epilogue else ""), **kw)


def kernel(form: str, epilogue: str = "", rows: int = 1, depth: int = 2,
           col_groups: int = 1, norm: bool = False, gate: tuple = (),
           merge: tuple = ()) -> Kernel:
    """The shader of one form ("basic": tiled and dot; "tile8", "tile8_vec4",
    "tile8_vec4_pf" (prefetching: ``prefetches``), and with K split in S spans
    "tile8_split", "tile8_vec4_split", "tile8_vec4_pf_split"; "gemv",
    "gemvsg_browser", "gemvsg_native" with ``rows``, ``depth`` and ``col_groups``) and
    epilogue; with an input prologue (gemv forms, vec4 and packed entries): ``norm``,
    RMSNorm's (ops/norm_linear.py), or ``gate``, the steps of a two-input element-wise
    chain (ops/gated_linear.py), or ``merge``, the split attention's (heads, head dim,
    parts) merged (ops/attention_merge.py)."""
    if not form.startswith("gemv"):
        rows, depth, col_groups, norm, gate, merge = 1, 2, 1, False, (), ()
    return _kernel(form, epilogue, rows, depth, col_groups, norm, tuple(gate), tuple(merge))


_GATES: dict[tuple, int] = {}  # a gated prologue's steps -> its number in kernel names


@cache
def _kernel(form: str, epilogue: str, rows: int, depth: int, col_groups: int,
            norm: bool = False, gate: tuple = (), merge: tuple = ()) -> Kernel:
    if form == "basic":
        return _with_epilogue("matmul", epilogue,
                              entries=(Entry("dot", "dot_item", "params.m * params.n"),))
    if form.startswith("tile8"):
        vec, split = "_vec4" in form, form.endswith("_split")
        steps = sections(_PARTS)["tile8_prefetch"] if "_pf" in form else \
            fill(_PARTS, "tile8_steps", form="vec4" if vec else "scalar")
        return _with_epilogue(form.replace("tile8", "matmul_tile8"), epilogue,
                              steps + sections(_PARTS)["fma_8x8"]
                              + sections(_PARTS)["tile8_split" if split else "tile8_whole"],
                              body="matmul_tile8", bindings=SPLIT_BINDINGS if split else (),
                              snippets=("split_k_sum",) if split else (),
                              entries=(Entry("sum_parts", "sum_item", "params.m * params.n"),)
                              if split else ())
    subgroups = form != "gemv"
    # One kernel per row count (a const: naga 29 panics when ``rows`` is an override).
    # Chromium needs `enable subgroups;`; wgpu-native's naga rejects it and takes the
    # builtins when the device has the "subgroup" feature.
    name = {"gemv": "matmul_gemv", "gemvsg_browser": "matmul_gemv_sg",
            "gemvsg_native": "matmul_gemv_sg_native"}[form]
    suffix = (f"_d{depth}" if depth != 2 else "") + (f"_g{col_groups}" if col_groups > 1 else "")
    if norm:
        name += "_norm"
    if gate:
        name += f"_gate{_GATES.setdefault(gate, len(_GATES))}"
    if merge:
        name += "_merge{}x{}x{}".format(*merge)
    return _with_epilogue(f"{name}_r{rows}{suffix}", epilogue,
                          _gemv_generated(subgroups, rows, depth, col_groups, norm, gate,
                                          merge),
                          body="matmul_gemv", snippets=("flat_index",), norm=norm, gate=gate,
                          merge=merge,
                          enables=("subgroups",) if form == "gemvsg_browser" else ())


# (entry point, sweep, elements per step, elements per input index)
_GEMV_FORMS = (("main", "scalar", 1, 1), ("main_vec4", "vec4", 4, 4),
               ("main_packed", "packed", 8, 4))


def _gemv_generated(subgroups: bool, rows: int, depth: int, col_groups: int,
                    norm: bool = False, gate: tuple = (), merge: tuple = ()) -> str:
    """The gemv sweeps (one per load width), reductions and entry points, appended to
    shaders/matmul_gemv.wgsl's steps (sections of matmul_parts.wgsl); with an input
    prologue (``norm``, ``gate``, ``merge``) only the vec4 ones, which read the input
    through x4_at."""
    parts = sections(_PARTS)
    forms = _GEMV_FORMS[1:] if norm or gate or merge else _GEMV_FORMS
    sweeps = "".join(
        fill(_PARTS, "sweep", form=f, per_step=ps, per_input=pi,
             steps="".join(fill(_PARTS, "step", form=f, i=i) for i in range(depth)))
        for _, f, ps, pi in forms)
    entry = "gemv_entry_subgroups" if subgroups else "gemv_entry"
    reduce = "me, sg_size, sg_lane" if subgroups else "me"
    prologue = ""
    if merge:
        prologue = "  set_merge(lane);\n"
    entries = "".join(fill(_PARTS, entry, name=n, form=f, total="t" if norm else
                           f"lanes_sum(sweep_{f}(b, sub), {reduce})",
                           prologue=_norm_body(f, reduce, subgroups) if norm else prologue)
                      for n, f, _, _ in forms)
    x_source = parts["x_plain"]
    if norm:
        x_source = parts["gemv_norm"] + fill("snippets", "rare_row4", rows="input4")
    if gate:  # the chain's own step functions, and the f32 math they call
        x_source = "".join(sections("f32_math")[f] for f in GATED_MATH) \
            + chain_function(2, gate) + parts["gemv_gated"]
    if merge:
        x_source = merge_consts(merge) + parts["gemv_merge"]
    return (fill(_PARTS, "gemv_consts", rows=rows, depth=depth, col_groups=col_groups)
            + sweeps + parts["tree_sum"] + x_source
            + parts["subgroup_sum" if subgroups else "tree_lanes"] + entries)


def _norm_body(form: str, reduce: str, subgroups: bool) -> str:
    """The gemv_norm entry's body up to ``t``, the lane's column totals: the f16 form
    finds the rows' scales first (summed by subgroupAdd where one subgroup is all); the
    f32 form scales the sums last (matmul_parts.wgsl gemv_norm), sweeping a block with a
    rare row again with its scales set first."""
    first = ("  if (sg_size >= wg_size) { set_norm(nb, subgroupAdd(nss)); } "
             "else { set_norm(nb, norm_tree(nss, lane)); }\n" if subgroups
             else "  set_norm(nb, norm_tree(nss, lane));\n")
    sweep = f"lanes_sum(sweep_{form}(b, sub), {reduce})"
    return (
        "  let nb = block_of(g, 0u);\n  var t: vec4<f32>;\n"
        "  if (elem_is_f16) {\n  let nss = norm_squares(nb, lane);\n" + first
        + f"  t = {sweep};\n"
        "  } else {\n"
        "  norm_k = vec4<i32>(0);\n  norm_rstd = vec4<f32>(1.0);\n"
        f"  t = {sweep};\n"
        "  let nss = norm_ss;\n  workgroupBarrier();  // lanes_sum's workgroup memory, read\n"
        f"  let ss = lanes_sum(Sums(nss, nss, nss, nss), {reduce});\n"
        "  if (lane == 0u) { norm_total = ss; }  // lane 0 holds them on every path\n"
        "  let total = workgroupUniformLoad(&norm_total);  // every lane sweeps alike\n"
        "  set_norm(nb, total);\n"
        "  if (norm_any_rare(total)) {\n"
        f"    t = {sweep};\n"
        "  } else {\n    t *= norm_rstd;\n  }\n  }\n")


KERNEL = kernel("basic")  # the plain shaders, declared at import (tests compose them)
TILE8 = {form + split: kernel(form + split) for form in ("tile8", "tile8_vec4", "tile8_vec4_pf")
         for split in ("", "_split")}
GEMV = {rows: kernel("gemv", rows=rows) for rows in range(1, GEMV_MAX_ROWS + 1)}


# --- recording ------------------------------------------------------------------------
def threads_per_side(max_invocations: int) -> int:
    """The largest power of two t <= 8 with t * t invocations within the adapter's limit."""
    t = MAX_THREADS_PER_SIDE
    while t > 1 and t * t > max_invocations:
        t //= 2
    return t


def tile_counts(m: int, n: int, tile: int) -> tuple[int, int]:
    """(tiles across N, tiles in all) for an M x N output in tile x tile blocks."""
    tiles_n = -(-n // tile)
    return tiles_n, tiles_n * -(-m // tile)


def prefetches(v: Variant) -> bool:
    """Whether mm variant ``v``'s vec4 form loads each step while the one before is
    computed (matmul_parts.wgsl tile8_prefetch): where a lane's share of a step, 2 TK / TW
    vec4s of each operand, fits the PREFETCH_VEC4S registers of matmul_tile8.wgsl's
    Fetched (mm4-4x16 has 8 per lane: it stages each step as it comes)."""
    return 2 * v.b <= PREFETCH_VEC4S * v.a


def _shape(ctx, v: Variant, m: int, n: int, epilogue: str = "", norm: bool = False,
           gate: tuple = (), merge: tuple = ()):
    """(kernel, constants, tiles_n, tiles, workgroups) of variant ``v``."""
    if v.kind == "dot":
        wg = elementwise_workgroup(ctx)
        return kernel("basic", epilogue), {"wg_size": wg}, 0, 0, -(-m * n // wg)
    if v.kind == "tiled":
        t = threads_per_side(ctx.device.info.traits.max_invocations)
        tiles_n, tiles = tile_counts(m, n, 4 * t)
        return kernel("basic", epilogue), {"tw": t}, tiles_n, tiles, tiles
    if v.kind == "mm":
        tiles_n, tiles = tile_counts(m, n, 8 * v.a)
        form = ("tile8_vec4" + "_pf" * prefetches(v) if v.vec4 else "tile8") \
            + ("_split" if v.splits > 1 else "")
        return kernel(form, epilogue), {"tw": v.a, "tk": v.b}, tiles_n, tiles, tiles * v.splits
    # the browser's WGSL needs `enable subgroups;`, wgpu-native's naga rejects it
    form = "gemv" if v.kind == "gemv" else (
        "gemvsg_browser" if ctx.device.info.traits.subgroups else "gemvsg_native")
    rows = min(GEMV_MAX_ROWS, m)
    tiles_n = -(-n // (v.b * v.groups))
    tiles = tiles_n * -(-m // rows)
    return (kernel(form, epilogue, rows, v.depth, v.groups, norm, gate, merge),
            {"wg_size": v.a, "cols": v.b}, tiles_n, tiles, tiles)


def takes_prologue(v: Variant, k: int, rows: int) -> bool:
    """Whether variant ``v`` runs with an input prologue for up to ``rows`` rows of K: a
    gemv form with vec4 loads, for decode's few rows (each workgroup redoes the prologue's
    work over its rows: RMSNorm's sums of squares at 256 rows, redone by the N / cols
    workgroups of a row block, were 3x slower in prefill on the H200, where the norm's own
    kernel does it once; a gated chain's sigmoids likewise)."""
    return v.kind in ("gemv", "gemvsg") and k % 4 == 0 and v.for_k(k).vec4 \
        and rows <= DECODE_ROWS


async def record(ctx, op, v: Variant, bindings, m: int, n: int, k: int, has_bias: bool,
                 half: bool = False, epilogue: str = "", n0: int = 0, n1: int = 0,
                 eps: float | None = None, gate: tuple = (), merge: tuple = ()) -> None:
    """Record one product of variant ``v``: ``bindings`` maps 0 input [M, K], 1 weight
    [N, K], 2 out [M, N], 4 bias [N] (anything when ``has_bias`` is False), and what the
    epilogue binds (5, 6), to value ids or buffers; with ``eps`` (a ``takes_prologue``
    variant) the input is RMSNorm'ed first, its weight at 7; with ``gate`` (steps of a
    two-input chain) the input is the chain of input 0 and input 7; with ``merge`` the
    split attention's parts at 7 merged (ops/attention_merge.py). Also used by bench/.
    Returns, for each dispatch recorded, fn(rows) -> its workgroups for the output's first
    rows (a dynamic M: ``product``)."""
    v = v.for_dtype(half)
    span = k
    if v.splits > 1:  # spans of whole K steps, none empty: maybe fewer than named
        splits, span = split_k.spans(k, v.splits, v.b)
        v = replace(v, splits=splits)
    shader, constants, tiles_n, tiles, groups = _shape(ctx, v, m, n, epilogue, eps is not None,
                                                       gate, merge)
    entry = {"dot": "dot", "tiled": "main", "mm": "main"}.get(v.kind, v.entry)
    pipeline = await ctx.pipeline(shader, constants, entry, half)
    params = PARAMS.pack(m=m, n=n, k=k, has_bias=int(has_bias), tiles_n=tiles_n, tiles=tiles,
                         n0=n0, n1=n1, eps=eps or 0.0, splits=v.splits, k_span=span)
    bindings = list(bindings) + [(3, ctx.uniform(params, f"{op.name} params"))]
    grids = [lambda rows: _shape(ctx, v, rows, n)[4]]
    if v.splits == 1:
        ctx.dispatch(op, pipeline, bindings, ctx.grid(groups))
        return grids
    # the spans' partial sums (the tiles read the operands), then their sum through the
    # epilogue (which writes the outputs): each entry binds what it uses
    bindings.append((8, ctx.resources.scratch(split_k.SCRATCH, 4 * v.splits * m * n)))
    ctx.dispatch(op, pipeline, [b for b in bindings if b[0] in (0, 1, 3, 8)], ctx.grid(groups))
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(shader, {"wg_size": wg}, "sum_parts", half)  # its own only
    ctx.dispatch(op, pipeline, [b for b in bindings if b[0] not in (0, 1)],
                 ctx.grid(-(-m * n // wg)))
    return grids + [lambda rows: -(-rows * n // wg)]


def linear_dims(in_shape, w_shape, out_shape, name: str) -> tuple[int, int, int]:
    """(M, N, K) of a linear; FormatError when the shapes disagree."""
    if not in_shape or len(w_shape) != 2:
        raise FormatError(f"{name}: input {list(in_shape)} and weight {list(w_shape)} must "
                          "be [..., K] and [N, K]")
    (n, k), lead = w_shape, tuple(in_shape[:-1])
    if in_shape[-1] != k or tuple(out_shape) != lead + (n,):
        raise FormatError(f"{name}: input {list(in_shape)}, weight {list(w_shape)} and "
                          f"output {list(out_shape)} do not match (out = [..., N])")
    return prod(lead), n, k


def has_bias(ctx, op, b_id: int, n: int) -> bool:
    """Whether the op has a bias (then checked to hold N values)."""
    if isinstance(ctx.graph.values[b_id], Null):
        return False
    b = ctx.float_tensor(b_id, op)
    if b.numel != n:
        raise FormatError(f"{op.name}: bias shape {list(b.shape)}, expected [{n}]",
                          field=ctx.where(op))
    return True


async def build_linear(ctx, op):
    x_id, w_id, b_id, out_id = ctx.args(op, 4)
    x, w, out = (ctx.float_tensor(i, op) for i in (x_id, w_id, out_id))
    m, n, k = linear_dims(x.shape, w.shape, out.shape, op.name)
    bias = has_bias(ctx, op, b_id, n)
    bindings = [(0, x_id), (1, w_id), (2, out_id), (4, b_id if bias else w_id)]
    await product(ctx, op, bindings, m, n, k, bias, out_id, n)


class InputPrologue:
    """An op folded into a product's input (ops/norm_linear.py's NormInput,
    ops/gated_linear.py's GatedInput): the forms that take the prologue read ``x_id`` at
    binding 0 and ``extra_id`` at their extra binding (``bind``) and compute the folded
    op's output as they load it; ``cover`` records the op's own dispatch (``fallback``)
    for the other forms. ``record`` holds record()'s keyword for the prologue;
    ``max_rows``: the most rows a form that takes it may serve."""

    max_rows = DECODE_ROWS
    workgroup_bytes = 0  # workgroup memory its forms hold beside their own

    def __init__(self, ctx, op, x_id: int, extra_id: int, record: dict):
        self.ctx, self.op, self.x_id, self.extra_id, self.record = ctx, op, x_id, extra_id, record

    async def fallback(self, rows_above: int) -> None:
        raise NotImplementedError

    async def cover(self, forms, prologue) -> None:
        """``forms``: (up to how many rows, variant), most rows first; ``prologue``: which
        take the prologue (the fewest rows' ones). Unless all do, the folded op's own
        dispatch, run only for more rows than those take."""
        if not all(prologue):
            await self.fallback(next((top for (top, _), p in zip(forms, prologue) if p), 0))

    def allowed(self, forced: bool) -> bool:
        """Not where the rule chose a CPU adapter's form: there every workgroup's redone
        sums and per-load work are work on the same two cores, not latency hidden behind a
        dispatch (SmolLM2 decode on SwiftShader: 2.1 s per token folded, 0.5 s not); a
        ``forced`` variant still takes it (tests of the prologue on lavapipe)."""
        return forced or not matmul_choice.is_cpu(self.ctx.device.info.traits)

    async def settle(self, op, forms, takes) -> None:
        """``cover`` for a product's ``forms`` (``takes``: which take the prologue), and
        the decode form's taking it noted for profiles and inspect."""
        await self.cover(forms, takes)
        if takes[-1]:
            self.ctx.note_kernel(op, prologue=next(iter(self.record)))

    def bind(self, bindings, extra: int) -> list:
        """``bindings`` of a form with the prologue: ``x_id`` at 0, ``extra_id`` at
        ``extra``."""
        return [(0, self.x_id) if b == 0 else (b, v) for b, v in bindings] \
            + [(extra, self.extra_id)]


async def product(ctx, op, bindings, m: int, n: int, k: int, has_bias: bool, out_id: int,
                  out_n: int, epilogue: str = "", n0: int = 0, n1: int = 0,
                  prologue: InputPrologue | None = None) -> None:
    """The chosen form of an [M, K] x [N, K] product (and its decode twin); ``out_id``,
    ``out_n`` columns wide, is the output whose actual size the dispatches follow.
    ``prologue``: the input is a folded op's output (RMSNorm's: ops/norm_linear.py; a
    gated chain's: ops/gated_linear.py); forms that take the prologue (``takes_prologue``)
    read its inputs and compute it themselves, the others read the input that ``await
    prologue.cover(forms, takes)`` records the op's own dispatch for (run only where more
    than ``rows_above`` rows are actual)."""
    if m * n == 0:
        return
    if prologue is None:  # a split attention's merge left to this linear (attention_merge)
        prologue = ctx.merges.pop(dict(bindings).get(0), None)
    traits = ctx.device.info.traits
    half, extra = ctx.half(out_id), (epilogue, n0, n1)
    v = VARIANTS.pick(ctx, op, m=m, n=n, k=k, half=half)
    # A dynamic M (one program for prefill and decode): the actual rows' workgroups only,
    # and where fewer rows pick other forms (matrix-vector for decode, ...), each is
    # recorded too and takes the executes of its row range (the others' grids are empty).
    forms = [(m, v)]
    chosen = VARIANTS.forced(ctx.options) is None  # by the rule, not forced
    dynamic = chosen and m > 1 and ctx.dyn is not None \
        and ctx.dyn.is_dynamic(ctx.graph_key, out_id)
    if dynamic:
        forms = row_forms(traits, m, n, k, v, half)
    if len(forms) > 1:
        ctx.note_kernel(op, twin=", ".join(f.name for _, f in forms[1:]))
    prologue_ok = prologue is not None and prologue.allowed(forced=not chosen)
    top, last = forms[-1]
    cap = prologue.max_rows if prologue is not None else DECODE_ROWS
    if prologue_ok and dynamic and top > cap and takes_prologue(last.for_dtype(half), k, cap):
        # the fewest rows' form serves prefill's rows too (GPUs: up to 256): decode's
        # take it with the prologue, more rows after the folded op's own dispatch
        forms.append((cap, last))
    takes = [prologue_ok and top <= cap and takes_prologue(f.for_dtype(half), k, top)
             and 16 * f.a * f.b + prologue.workgroup_bytes <= traits.workgroup_storage
             for top, f in forms]
    if takes != sorted(takes):  # not the fewest rows' forms alone: none takes it
        takes = [False] * len(forms)
    if prologue is not None:  # forms taking the prologue serve the fewest rows (matrix-vector)
        await prologue.settle(op, forms, takes)

    def rows(elements: int) -> int:
        return -(-elements // out_n)

    for i, (top, form) in enumerate(forms):
        low = forms[i + 1][0] if i + 1 < len(forms) else 0  # the next form's rows are below
        if takes[i]:
            grids = await record(ctx, op, form, prologue.bind(bindings, 7), m, n, k,
                                 has_bias, half, *extra, **prologue.record)
        else:
            grids = await record(ctx, op, form, bindings, m, n, k, has_bias, half, *extra)
        for back, groups in zip(range(len(grids), 0, -1), grids):
            follow_actual_size(
                ctx, out_id, lambda e, g=groups, low=low, top=top:
                g(rows(e)) if low < rows(e) <= top else 0, alternative=i > 0, back=back)


def choices(graph, op) -> dict[str, str]:
    """The variant each typical adapter would run for this op (shown by inspect)."""
    if len(op.args) != 4:
        return {}
    x, w = graph.values[op.args[0]], graph.values[op.args[1]]
    if not (isinstance(x, TensorValue) and isinstance(w, TensorValue) and x.shape
            and len(w.shape) == 2):
        return {}  # malformed op: inspect shows it, the build refuses it
    m, (n, k) = prod(x.shape[:-1]), w.shape
    if not m * n * k:
        return {}
    return VARIANTS.typical(m=m, n=n, k=k)


def reference(read, values, args):
    x, w = read(args[0]), read(args[1])
    bias = None if isinstance(values[args[2]], Null) else read(args[2]).values
    if not x.shape or len(w.shape) != 2 or x.shape[-1] != w.shape[1]:
        raise FormatError(f"linear: input {list(x.shape)} and weight {list(w.shape)} must be "
                          "[..., K] and [N, K]")
    n, k = w.shape
    rows = [w.values[j * k:(j + 1) * k] for j in range(n)]
    out = []
    for start in range(0, len(x.values), k):
        xs = x.values[start:start + k]
        out += [math.fsum(map(operator.mul, xs, row)) + (bias[j] if bias else 0.0)
                for j, row in enumerate(rows)]
    return out


define("aten.linear.default", build_linear, reference, 4, half=True, choices=choices,
       sizes=sizes.linear)
