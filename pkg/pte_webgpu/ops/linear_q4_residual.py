"""``pte_webgpu.linear_q4gsw_residual [x, weights, scales, group_size, bias|Null,
offsets|Null, residual, out]``: a 4-bit linear (et_vk.linear_q4gsw, or with offsets
pte_webgpu.linear_q4gsw_offsets: ops/linear_q4.py) with the residual add after it folded
into its epilogue, ``out = residual + linear``, rounded as the linear's output and then
the add's would be (matmul_parts.wgsl ``put_residual``). runtime/fusion_q4.py rewrites
``add.Tensor(residual, q4 linear)`` to it: one dispatch where there were two, as the
float linears' residual form (ops/fused_linear.py)."""

from __future__ import annotations

from ..errors import FormatError
from ..model.graph import Null
from . import sizes
from .linear_q4 import OFFSETS, Q4GSW, _tensor, choices, plan, product, reference_q4gsw
from .registry import define

RESIDUAL = "pte_webgpu.linear_q4gsw_residual"


def check_residual(values, r_id: int, out_id: int, name: str) -> None:
    r, out = _tensor(values, r_id, name, "residual"), _tensor(values, out_id, name, "output")
    if tuple(r.shape) != tuple(out.shape) or r.dtype != out.dtype:
        raise FormatError(f"{name}: residual {getattr(r.dtype, 'name', '?')}{list(r.shape)} "
                          f"and output {getattr(out.dtype, 'name', '?')}{list(out.shape)} "
                          "should agree")


def inner_args(values, args) -> tuple:
    """The linear's own arguments (those of et_vk.linear_q4gsw, or with offsets)."""
    x_id, w_id, s_id, g_id, b_id, o_id, r_id, out_id = args
    return (x_id, w_id, s_id, g_id, b_id) + (() if isinstance(values[o_id], Null)
                                             else (o_id,)) + (out_id,)


async def build(ctx, op):
    args = ctx.args(op, 8)
    r_id, out_id = args[6], args[7]
    try:
        check_residual(ctx.graph.values, r_id, out_id, op.name)
    except FormatError as e:
        raise FormatError(str(e), field=ctx.where(op)) from None
    p = plan(ctx, op, inner_args(ctx.graph.values, args))
    p["bindings"].append((6, r_id))
    ctx.note_kernel(op, fused="q4 linear + residual add")
    await product(ctx, op, **p, epilogue="residual")


def reference(read, values, args):
    r_id, out_id = args[6], args[7]
    check_residual(values, r_id, out_id, RESIDUAL)
    inner = inner_args(values, args)
    linear = reference_q4gsw(read, values, inner, OFFSETS if len(inner) == 7 else Q4GSW)
    return [r + v for r, v in zip(read(r_id).values, linear)]


define(RESIDUAL, build, reference, 8, half=True, choices=choices, sizes=sizes.linear)
