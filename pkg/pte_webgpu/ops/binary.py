"""Elementwise binary ops with NumPy broadcasting (shaders/binary.wgsl).

``TABLE`` is the one definition of each op: its name, whether it carries ``alpha``
(``[self, other, alpha, out]``, else ``[self, other, out]``), the WGSL expression of
``x``, ``y`` (f32; ``params.alpha``) the shader's ``combine`` switch is generated from,
and the CPU reference ``ref(x, y, alpha)``. ``gather`` is the same index math with one
operand: a copy through any strides (view.py's permute).
"""

from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from math import prod
from typing import Callable

from ..errors import FormatError
from ..model import f32
from ..shaders.compose import Binding, Entry, Kernel, Uniform, cases, fill
from . import cpu_reference as cpu
from . import sizes
from .args import number
from .common import check_rank, elementwise_workgroup
from .exec_ints import follow_actual_size
from .registry import define


@dataclass(frozen=True)
class Binary:
    name: str
    alpha: bool  # takes an alpha argument: x OP alpha * y
    wgsl: str  # expression of x, y: f32
    ref: Callable  # (x, y, alpha) -> float


def _div(x: float, y: float) -> float:
    if y:
        return x / y
    if x != x or x == 0:
        return math.nan
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


def _pick(x: float, y: float, take_x: bool) -> float:
    """NaN if either is NaN, else x when ``take_x`` (ties included), else y."""
    if x != x:
        return x
    return y if y != y or not take_x else x


TABLE = [
    Binary("aten.add.Tensor", True, "x + params.alpha * y", lambda x, y, a: x + a * y),
    Binary("aten.sub.Tensor", True, "x - params.alpha * y", lambda x, y, a: x - a * y),
    Binary("aten.mul.Tensor", False, "x * y", lambda x, y, a: operator.mul(x, y)),
    Binary("aten.div.Tensor", False, "x / y", lambda x, y, a: _div(x, y)),
    Binary("aten.minimum.default", False, "min_nan(x, y)", lambda x, y, a: _pick(x, y, x <= y)),
    Binary("aten.maximum.default", False, "max_nan(x, y)", lambda x, y, a: _pick(x, y, x >= y)),
]
ROW = {row.name: i for i, row in enumerate(TABLE)}

PARAMS = Uniform(("numel", "u32"), ("rank", "u32"), ("alpha", "f32"),
                 ("same_shape", "u32"),  # 1 when a, b and out share one shape: no index math
                 ("out_shape", "vec8"), ("a_strides", "vec8"), ("b_strides", "vec8"))
KERNEL = Kernel(
    "binary", (Binding(0, "a"), Binding(1, "b"), Binding(2, "out", "read_write")), PARAMS,
    snippets=("bits", "nan_minmax", "shape_index"),
    entries=(Entry("main", "item", "params.numel"), Entry("gather", "gather_item", "params.numel")),
    generated=fill("generated", "combine", cases=cases([row.wgsl for row in TABLE])))


def broadcast_strides(shape: tuple, out_shape: tuple, name: str) -> list[int]:
    """Element strides of ``shape`` seen through ``out_shape`` (0 where broadcast)."""
    if len(shape) > len(out_shape):
        raise FormatError(f"{name}: operand rank {len(shape)} exceeds output rank "
                          f"{len(out_shape)}")
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    strides, step = [0] * len(out_shape), 1
    for d in range(len(out_shape) - 1, -1, -1):
        if padded[d] == out_shape[d]:
            strides[d] = step if padded[d] != 1 else 0
        elif padded[d] != 1:
            raise FormatError(f"{name}: shape {list(shape)} does not broadcast to "
                              f"{list(out_shape)}")
        step *= padded[d]
    return strides


async def gather(ctx, op, x_id: int, out_id: int, out_shape, src_strides) -> None:
    """out (contiguous, ``out_shape``) = x read at ``sum(coord[d] * src_strides[d])``."""
    numel = prod(out_shape)
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, "gather", half=ctx.half(out_id))
    params = PARAMS.pack(numel=numel, rank=len(out_shape), out_shape=out_shape,
                         a_strides=src_strides)
    ctx.dispatch(op, pipeline, [(0, x_id), (2, out_id), (3, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-numel // wg)))
    follow_actual_size(ctx, out_id, wg)


async def build(ctx, op):
    row = TABLE[ROW[op.name]]
    if op.name == "aten.sub.Tensor" and ctx.tensor(op.args[-1], op).dtype.name in ("int32", "int64"):
        from .mixed import sub_int  # integer operands: a kernel of their own
        return await sub_int(ctx, op)
    if row.alpha:
        a_id, b_id, alpha_id, out_id = ctx.args(op, 4)
        alpha = f32.checked_f32(ctx.float_scalar(alpha_id, 1.0), f"{op.name}: alpha",
                                lambda m: FormatError(m, field=ctx.where(op)))
    else:
        (a_id, b_id, out_id), alpha = ctx.args(op, 3), 1.0
    a, b, out = (ctx.float_tensor(i, op) for i in (a_id, b_id, out_id))
    check_rank(op, out.shape)
    a_strides = broadcast_strides(a.shape, out.shape, op.name)
    b_strides = broadcast_strides(b.shape, out.shape, op.name)
    if out.numel == 0:
        return
    params = PARAMS.pack(numel=out.numel, rank=len(out.shape), alpha=alpha,
                         same_shape=int(a.shape == out.shape == b.shape), out_shape=out.shape,
                         a_strides=a_strides, b_strides=b_strides)
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg, "op": ROW[op.name]},
                                  half=ctx.half(out_id))
    ctx.dispatch(op, pipeline, [(0, a_id), (1, b_id), (2, out_id),
                                (3, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-out.numel // wg)))
    follow_actual_size(ctx, out_id, wg)


def add(a: cpu.Array, b: cpu.Array, alpha: float, out_shape: tuple) -> list:
    """The reference of add.Tensor on two arrays (also tests' entry point)."""
    return cpu.elementwise(a, b, out_shape, lambda x, y: x + alpha * y)


def _reference(row: Binary):
    def fn(read, values, args):
        alpha = number(values[args[2]], 1.0) if row.alpha else 1.0
        return cpu.elementwise(read(args[0]), read(args[1]), values[args[-1]].shape,
                               lambda x, y: row.ref(x, y, alpha))
    return fn


for _row in TABLE:
    define(_row.name, build, _reference(_row), 4 if _row.alpha else 3, half=True,
           sizes=sizes.broadcast, pointwise=("binary", ROW[_row.name]))
