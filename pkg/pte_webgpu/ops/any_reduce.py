"""``any`` reductions (shaders/any.wgsl), bool out: ``aten::any.out [self, dim: Int,
keepdim, out]`` (the plan kernel of ``_safe_softmax``; the ``aten.any.default`` of the
registry), ``aten.any.dims [self, dims: IntList|None, keepdim, out]`` and ``aten.any.all
[self, out]``. Bool, int and float inputs (nonzero, NaN included, is true)."""

from __future__ import annotations

from math import prod

from ..errors import FormatError
from ..model.graph import Null, Scalar
from ..shaders.compose import Binding, Entry, Kernel, Uniform, sections
from . import cpu_reference as cpu
from .args import int_list
from .common import check_rank, contiguous_strides, elementwise_workgroup
from .exec_ints import follow_actual_size
from .mixed import type_of
from .registry import define

PARAMS = Uniform(("numel", "u32"), ("rank", "u32"), ("count", "u32"), ("kept", "vec8"),
                 ("reduced", "vec8"), ("strides", "vec8"))
# the stored type of each input type; nonzero is shaders/generated.wgsl's nonzero_<type>
_WORD = {"float": "elem", "int": "i32", "bool": "u32"}
KERNELS = {t: Kernel("any", (Binding(0, "a", type=w), Binding(1, "out", "read_write", type="u32")),
                     PARAMS, snippets=("bits", "shape_index"), half=t == "float",
                     entries=(Entry("main", "any_item", "params.numel"),),
                     generated=sections("generated")[f"nonzero_{t}"], name=f"any_{t}")
           for t, w in _WORD.items()}


def _dims(values, args, rank: int, where: str) -> list[int]:
    if len(args) == 2:  # any.all
        return list(range(rank))
    v = values[args[1]]
    if isinstance(v, Null):
        return list(range(rank))
    if isinstance(v, Scalar) and v.kind == "int":
        dims = [int(v.value)]
    else:
        dims = int_list(v)
    try:
        return cpu.norm_dims(dims, rank) if dims else list(range(rank))
    except FormatError as e:
        raise FormatError(f"any: {e}", field=where) from None


def _plan(in_shape, out_shape, dims, where):
    kept = [1 if d in dims else s for d, s in enumerate(in_shape)]
    if prod(kept) != prod(out_shape):
        raise FormatError(f"any: reducing {list(in_shape)} over {dims} does not give "
                          f"{list(out_shape)}", field=where)
    reduced = [s if d in dims else 1 for d, s in enumerate(in_shape)]
    return kept, reduced


async def build(ctx, op):
    x_id, out_id = op.args[0], op.args[-1]
    x, out = ctx.tensor(x_id, op), ctx.tensor(out_id, op)
    if out.dtype.name != "bool":
        raise FormatError(f"{op.name}: the output should be bool, found {out.dtype.name}",
                          field=ctx.where(op))
    check_rank(op, x.shape)
    dims = _dims(ctx.graph.values, op.args, len(x.shape), ctx.where(op))
    kept, reduced = _plan(x.shape, out.shape, dims, ctx.where(op))
    if out.numel == 0:
        return
    kind = type_of(x.dtype)
    params = PARAMS.pack(numel=out.numel, rank=len(x.shape), count=prod(reduced), kept=kept,
                         reduced=reduced, strides=contiguous_strides(x.shape))
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNELS[kind], {"wg_size": wg},
                                  half=kind == "float" and ctx.half(x_id))
    ctx.dispatch(op, pipeline, [(0, x_id), (1, out_id),
                                (2, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-out.numel // wg)))
    follow_actual_size(ctx, out_id, wg)


def reference(read, values, args):
    x = read(args[0])
    dims = _dims(values, args, len(x.shape), "any")
    return [int(any(x.values[p] != 0 for p in line))  # NaN != 0
            for line in cpu.lines(x.shape, dims, len(x.values))]


define("aten.any.default", build, reference, 4, half=True)
define("aten.any.dims", build, reference, 4, half=True)
define("aten.any.all", build, reference, 2, half=True)
