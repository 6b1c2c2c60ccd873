"""Reductions (reduce.wgsl): one workgroup per output line.

``aten.mean.dim`` and ``aten.sum.dim_IntList [self, dims, keepdim, dtype, out]``,
``aten.amax.default`` / ``aten.amin.default [self, dims, keepdim, out]`` over any set of
dims (empty or Null: all of them; a max or min is NaN where the line holds one, as
torch); ``aten._softmax.default`` / ``aten._log_softmax.default [self, dim,
half_to_float, out]`` over any dim. Float tensors only (dtype, where given, a float).
A tensor's dims are split into kept dims (which pick the line) and reduced
dims (which walk it); adjacent dims of one kind are merged and size-1 dims dropped.
"""

from __future__ import annotations

import math
from math import prod

from ..errors import FormatError, UnsupportedError
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from . import cpu_reference as cpu
from . import sizes
from .args import bool_arg, int_arg, int_list, int_list_arg, number
from .common import (
    check_rank,
    contiguous_strides,
    elementwise_workgroup,
    normalize_dim,
    normalize_dims,
    pow2_workgroup,
)
from .exec_ints import follow_actual_size
from .registry import define
from .variants import declare


def reduction_layout(shape, dims) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """(kept, reduced) runs of ``(size, element stride)`` for a contiguous tensor of
    ``shape`` reduced over the (normalised) ``dims``, outermost first."""
    dims = set(dims)
    kept: list[list[int]] = []
    reduced: list[list[int]] = []
    last_kind = None
    for d, (size, stride) in enumerate(zip(shape, contiguous_strides(shape))):
        if size == 1:
            continue  # contributes nothing, and lets its neighbours merge
        kind = d in dims
        runs = reduced if kind else kept
        if kind == last_kind:
            runs[-1] = [runs[-1][0] * size, stride]
        else:
            runs.append([size, stride])
        last_kind = kind
    return [tuple(r) for r in kept], [tuple(r) for r in reduced]


def reduced_shape(shape, dims, keepdim: bool) -> tuple[int, ...]:
    """torch's output shape of a reduction of ``shape`` over ``dims``."""
    if keepdim:
        return tuple(1 if d in dims else s for d, s in enumerate(shape))
    return tuple(s for d, s in enumerate(shape) if d not in dims)


MEAN, SOFTMAX, SUM, AMAX, AMIN, LOG_SOFTMAX = range(6)  # reduce.wgsl's op codes


def _nan_max(values):
    """torch's amax of a line: NaN if any is NaN; on a tie of -0 and +0, +0."""
    top = None
    for v in values:
        if v != v:
            return v
        if top is None or v > top or (v == top and math.copysign(1.0, v) > 0):
            top = v
    return top


def _nan_min(values):
    return -_nan_max(-v for v in values)


def _sum(vs):
    try:
        return math.fsum(vs)
    except (OverflowError, ValueError):  # infinities (or NaN) among the terms
        return sum(vs)


_LINE_VALUE = {MEAN: lambda vs: _sum(vs) / len(vs), SUM: _sum, AMAX: _nan_max, AMIN: _nan_min}


def _reduce_reference(code: int):
    def fn(read, values, args):
        x = read(args[0])
        dims = int_list(values[args[1]])
        dims = cpu.norm_dims(dims, len(x.shape)) if dims else list(range(len(x.shape)))
        line_value = _LINE_VALUE[code]
        return [line_value([x.values[p] for p in line])
                for line in cpu.lines(x.shape, dims, len(x.values))]
    return fn


mean_reference = _reduce_reference(MEAN)


def _softmax_reference(log: bool):
    def fn(read, values, args):
        x = read(args[0])
        dims = cpu.norm_dims([int(number(values[args[1]]))], len(x.shape)) if x.shape else []
        out = [0.0] * len(x.values)
        for line in cpu.lines(x.shape, dims, len(x.values)):
            top = _nan_max(x.values[p] for p in line)
            shifted = [x.values[p] - top for p in line]
            exps = [cpu.exp(v) for v in shifted]
            total = _sum(exps)
            for p, v, e in zip(line, shifted, exps):
                out[p] = v - math.log(total) if log else e / total
        return out
    return fn


softmax_reference = _softmax_reference(False)
# A workgroup per line with a halving tree on GPUs; one line per invocation on CPU
# adapters, where barriers cost most.
VARIANTS = declare("reduce", ("tree", "lines"), doc="tree: a workgroup per line; lines: a "
                   "line per invocation",
                   choose=lambda traits: "lines" if traits.is_cpu else "tree")
LINES_WG = 16  # lines per workgroup in the "lines" form: spread over the CPU's threads

PARAMS = Uniform(("lines", "u32"), ("r", "u32"),  # r: elements per line
                 ("kept_rank", "u32"), ("red_rank", "u32"),
                 ("kept_shape", "vec8"), ("kept_strides", "vec8"),
                 ("red_shape", "vec8"), ("red_strides", "vec8"))
KERNEL = Kernel("reduce", (Binding(0, "x"), Binding(1, "y", "read_write")), PARAMS,
                snippets=("bits", "nan_minmax", "shape_index", "box_offset", "tree"),
                entries=(Entry("main", "tree_line", "params.lines", per="group"),
                         Entry("lines", "whole_line", "params.lines")))


async def _dispatch(ctx, op, x_id: int, out_id: int, code: int, dims) -> None:
    x = ctx.float_tensor(x_id, op)
    kept, reduced = reduction_layout(x.shape, dims)
    lines, r = prod(s for s, _ in kept), prod(s for s, _ in reduced)
    if lines == 0 or r == 0:
        if ctx.tensor(out_id, op).numel:  # mean over an empty dim: NaN in torch
            raise UnsupportedError(f"{op.name}: reducing an empty dimension "
                                   f"(shape {list(x.shape)})")
        return
    params = PARAMS.pack(lines=lines, r=r, kept_rank=len(kept), red_rank=len(reduced),
                         kept_shape=[s for s, _ in kept], kept_strides=[t for _, t in kept],
                         red_shape=[s for s, _ in reduced],
                         red_strides=[t for _, t in reduced])
    form = VARIANTS.pick(ctx, op)
    uniform = ctx.uniform(params, f"{op.name} params")
    if form == "lines":
        wg = min(LINES_WG, elementwise_workgroup(ctx))
        pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg, "op": code}, "lines",
                                      half=ctx.half(out_id))
        grid, per = ctx.grid(-(-lines // wg)), wg
    else:
        wg = pow2_workgroup(ctx, r)
        pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg, "op": code},
                                      half=ctx.half(out_id))
        grid, per = ctx.grid(lines), 1  # one workgroup per output line
    ctx.dispatch(op, pipeline, [(0, x_id), (1, out_id), (2, uniform)], grid)
    follow_actual_size(ctx, out_id, per)


# aten.sum.IntList: the plan kernel aten::sum.IntList_out (x.sum() left out of a delegate)
_DIM_REDUCTIONS = {"aten.mean.dim": (MEAN, 5), "aten.sum.dim_IntList": (SUM, 5),
                   "aten.sum.IntList": (SUM, 5),
                   "aten.amax.default": (AMAX, 4), "aten.amin.default": (AMIN, 4)}


async def build_reduction(ctx, op):
    code, count = _DIM_REDUCTIONS[op.name]
    x_id, dims_id, keep_id, *_dtype, out_id = ctx.args(op, count)
    x, out = ctx.float_tensor(x_id, op), ctx.float_tensor(out_id, op)
    check_rank(op, x.shape)
    dims = int_list_arg(ctx, dims_id, op, allow_null=True)
    dims = normalize_dims(dims, len(x.shape), op.name) if dims else list(range(len(x.shape)))
    want = reduced_shape(x.shape, dims, bool_arg(ctx, keep_id, op))
    if tuple(out.shape) != want:
        raise FormatError(f"{op.name}: output shape {list(out.shape)}, expected {list(want)}",
                          field=ctx.where(op))
    await _dispatch(ctx, op, x_id, out_id, code, dims)


for _name, (_code, _count) in _DIM_REDUCTIONS.items():
    define(_name, build_reduction, _reduce_reference(_code), _count, half=True,
           sizes=sizes.reduction)


async def build_softmax(ctx, op):
    x_id, dim_id, _half_id, out_id = ctx.args(op, 4)
    x, out = ctx.float_tensor(x_id, op), ctx.float_tensor(out_id, op)
    check_rank(op, x.shape)
    if tuple(out.shape) != tuple(x.shape):
        raise FormatError(f"{op.name}: output shape {list(out.shape)} differs from input "
                          f"{list(x.shape)}", field=ctx.where(op))
    dim = normalize_dim(int_arg(ctx, dim_id, op), len(x.shape), op.name)
    code = LOG_SOFTMAX if op.name == "aten._log_softmax.default" else SOFTMAX
    await _dispatch(ctx, op, x_id, out_id, code, [dim] if x.shape else [])


define("aten._softmax.default", build_softmax, softmax_reference, 4, half=True,
       sizes=sizes.same_as_first)
define("aten._log_softmax.default", build_softmax, _softmax_reference(True), 4, half=True,
       sizes=sizes.same_as_first)
