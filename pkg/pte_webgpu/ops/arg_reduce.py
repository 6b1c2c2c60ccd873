"""argmax / argmin (shaders/arg_reduce.wgsl): ``aten.argmax.default`` /
``aten.argmin.default [self, dim: Int or Null, keepdim: Bool, out]`` of a float tensor,
delegated or as the plan kernel ``aten::argmin.out`` (dim Null: over all elements, the
flat index). The first index of a tie and the first NaN win, as torch; the int64 output
is held as int32 (runtime/storage.py).
"""

from __future__ import annotations

from math import prod

from ..errors import FormatError, UnsupportedError
from ..model.graph import Null
from ..shaders.compose import Binding, Entry, Kernel
from . import cpu_reference as cpu
from .args import bool_arg, int_arg, number
from .common import check_rank, elementwise_workgroup, normalize_dim
from .reduce import PARAMS, reduced_shape, reduction_layout
from .registry import define

KERNEL = Kernel("arg_reduce", (Binding(0, "x"), Binding(1, "y", "read_write", type="i32")),
                PARAMS, snippets=("bits", "shape_index", "box_offset"),
                entries=(Entry("main", "arg_line", "params.lines"),))


def _dims(dim, rank: int) -> tuple[list[int], bool]:
    """(reduced dims, whether over all elements) of ``dim`` (None: all)."""
    return (list(range(rank)), True) if dim is None else ([dim], False)


def _out_shape(shape, dim, keepdim: bool) -> tuple:
    if dim is None:
        return (1,) * len(shape) if keepdim else ()
    return reduced_shape(shape, [dim], keepdim)


async def build(ctx, op):
    x_id, dim_id, keep_id, out_id = ctx.args(op, 4)
    x, out = ctx.float_tensor(x_id, op), ctx.tensor(out_id, op)
    if out.dtype.name not in ("int64", "int32"):
        raise UnsupportedError(f"{op.name}: output is {out.dtype.name}, expected int64 "
                               f"({ctx.where(op)})")
    check_rank(op, x.shape)
    dim = None if isinstance(ctx.graph.values[dim_id], Null) else \
        normalize_dim(int_arg(ctx, dim_id, op), max(1, len(x.shape)), op.name)
    if x.shape == () and dim is not None:
        dim = None  # a 0-dim tensor: index 0
    want = _out_shape(x.shape, dim, bool_arg(ctx, keep_id, op))
    if tuple(out.shape) != want:
        raise FormatError(f"{op.name}: output shape {list(out.shape)}, expected {list(want)}",
                          field=ctx.where(op))
    if x.numel == 0:
        raise UnsupportedError(f"{op.name}: an empty input has no {op.name[5:11]} "
                               f"({ctx.where(op)})")
    kept, reduced = reduction_layout(x.shape, _dims(dim, len(x.shape))[0])
    lines = prod(s for s, _ in kept)
    params = PARAMS.pack(lines=lines, r=prod(s for s, _ in reduced), kept_rank=len(kept),
                         red_rank=len(reduced), kept_shape=[s for s, _ in kept],
                         kept_strides=[t for _, t in kept], red_shape=[s for s, _ in reduced],
                         red_strides=[t for _, t in reduced])
    wg = min(64, elementwise_workgroup(ctx))
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg,
                                           "take_min": op.name == "aten.argmin.default"},
                                  half=ctx.half(x_id))
    ctx.dispatch(op, pipeline, [(0, x_id), (1, out_id),
                                (2, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-lines // wg)))


def _reference(take_min: bool):
    def fn(read, values, args):
        x = read(args[0])
        dim = None if isinstance(values[args[1]], Null) or not x.shape else \
            int(number(values[args[1]]))
        dims = _dims(None if dim is None else dim % len(x.shape), len(x.shape))[0]
        result = []
        for line in cpu.lines(x.shape, dims, len(x.values)) if x.shape else [[0]]:
            best, at = x.values[line[0]], 0
            for j, p in enumerate(line[1:], 1):
                v = x.values[p]
                if best != best:
                    break
                if v != v or (v < best if take_min else v > best):
                    best, at = v, j
            result.append(at)
        return result
    return fn


define("aten.argmax.default", build, _reference(False), 4, half=True)
define("aten.argmin.default", build, _reference(True), 4, half=True)
