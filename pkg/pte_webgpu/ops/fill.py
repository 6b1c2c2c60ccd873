"""Tensors made from scalars (shaders/fill.wgsl): ``aten.full.default [size, fill, dtype,
layout, device, pin_memory, out]``, ``aten.full_like.default [self, fill, dtype, layout,
device, pin_memory, memory_format, out]``, ``aten.zeros/ones.default [size, dtype, layout,
device, pin_memory, out]`` and ``aten.zeros_like/ones_like.default [self, dtype, layout,
device, pin_memory, memory_format, out]`` (the partitioner writes full/full_like for them;
a plan kernel may name them), the plan kernel ``aten::scalar_tensor.out [s,
out]`` and ``aten.arange.start_step [start, end, step, dtype, ..., out]``. The output's
dtype decides the stored value: float (f32/f16; -inf and NaN kept), int32/int64, bool
(nonzero -> 1). The fill is a Bool, Int or Double argument.
"""

from __future__ import annotations

import math

from ..errors import FormatError
from ..shaders.compose import Binding, Entry, Kernel, Uniform, sections
from .args import scalar_value
from .common import elementwise_workgroup
from .exec_ints import follow_actual_size
from .mixed import type_of
from .registry import define
from .sizes import same_as_first

PARAMS = Uniform(("numel", "u32"), ("a", "f32"), ("b", "f32"), ("n", "i32"), ("m", "i32"))
# the stored type of each output type; value_at is shaders/generated.wgsl's value_at_<type>
_WORD = {"float": "elem", "int": "i32", "bool": "u32"}
KERNELS = {t: Kernel("fill", (Binding(0, "out", "read_write", type=w),), PARAMS,
                     entries=(Entry("main", "fill_item", "params.numel"),), half=t == "float",
                     generated=sections("generated")[f"value_at_{t}"], name=f"fill_{t}")
           for t, w in _WORD.items()}


FILL_KINDS = ("bool", "int", "double")  # what a fill value or an arange bound may be


def _typed(value, kind: str):
    """``value`` as the output type holds it (floats rounded to f32 by the packing)."""
    if kind == "bool":
        return int(bool(value))
    if kind == "int":
        if isinstance(value, float) and not math.isfinite(value):
            raise FormatError(f"fill value {value} does not fit an integer tensor")
        return int(value)
    return float(value)


async def _fill(ctx, op, out_id: int, start, step) -> None:
    out = ctx.tensor(out_id, op)
    kind = type_of(out.dtype)
    if out.numel == 0:
        return
    start, step = _typed(start, kind), _typed(step, kind)
    ints = kind != "float"
    params = PARAMS.pack(numel=out.numel, a=0 if ints else start, b=0 if ints else step,
                         n=start if ints else 0, m=step if ints else 0)
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNELS[kind], {"wg_size": wg},
                                  half=kind == "float" and ctx.half(out_id))
    ctx.dispatch(op, pipeline, [(0, out_id), (1, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-out.numel // wg)))
    follow_actual_size(ctx, out_id, wg)


def _fill_arg(op_name: str, fill_index: int):
    async def build(ctx, op):
        await _fill(ctx, op, op.args[-1], scalar_value(ctx.graph.values, op.args[fill_index],
                                                  ctx.where(op), FILL_KINDS), 0)

    def reference(read, values, args):
        out = values[args[-1]]
        v = _typed(scalar_value(values, args[fill_index], op_name, FILL_KINDS), type_of(out.dtype))
        return [v] * out.numel
    return build, reference


def _constant_fill(value: int):
    async def build(ctx, op):
        await _fill(ctx, op, op.args[-1], value, 0)

    def reference(read, values, args):
        out = values[args[-1]]
        return [_typed(value, type_of(out.dtype))] * out.numel
    return build, reference


def _arange_args(values, args, where):
    start, end, step = (scalar_value(values, v, where, FILL_KINDS) for v in args[:3])
    if step == 0:
        raise FormatError("aten.arange.start_step: step is 0", field=where)
    count = max(0, math.ceil((end - start) / step))
    return start, step, count


async def build_arange(ctx, op):
    start, step, count = _arange_args(ctx.graph.values, op.args, ctx.where(op))
    out = ctx.tensor(op.args[-1], op)
    if out.shape != (count,):
        raise FormatError(f"aten.arange.start_step: {count} values, output is "
                          f"{list(out.shape)}", field=ctx.where(op))
    await _fill(ctx, op, op.args[-1], start, step)


def reference_arange(read, values, args):
    start, step, count = _arange_args(values, args, "aten.arange.start_step")
    kind = type_of(values[args[-1]].dtype)
    return [_typed(start + i * step, kind) for i in range(count)]


define("aten.full.default", *_fill_arg("aten.full.default", 1), 7, half=True)
define("aten.full_like.default", *_fill_arg("aten.full_like.default", 1), 8, half=True,
       sizes=same_as_first)
define("aten.scalar_tensor.default", *_fill_arg("aten.scalar_tensor.default", 0), None,
       half=True)
define("aten.arange.start_step", build_arange, reference_arange, 8, half=True)
for _name, _value in (("zeros", 0), ("ones", 1)):
    define(f"aten.{_name}.default", *_constant_fill(_value), 6, half=True)
    define(f"aten.{_name}_like.default", *_constant_fill(_value), 7, half=True,
           sizes=same_as_first)
