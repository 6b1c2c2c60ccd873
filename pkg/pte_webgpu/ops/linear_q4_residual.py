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
from .args import int_arg
from .linear_q4 import (OFFSETS, Q4GSW, _check_bias, _check_out, _check_scales, _check_stored,
                        _checked, _tensor, choices, product, q4gsw_shape, reference_q4gsw,
                        scale_laid_offsets)
from .registry import define

RESIDUAL = "pte_webgpu.linear_q4gsw_residual"


def _check_residual(values, r_id: int, out_id: int, name: str) -> None:
    r, out = _tensor(values, r_id, name, "residual"), _tensor(values, out_id, name, "output")
    if tuple(r.shape) != tuple(out.shape) or r.dtype != out.dtype:
        raise FormatError(f"{name}: residual {getattr(r.dtype, 'name', '?')}{list(r.shape)} "
                          f"and output {getattr(out.dtype, 'name', '?')}{list(out.shape)} "
                          "should agree")


async def build(ctx, op):
    x_id, w_id, s_id, g_id, b_id, o_id, r_id, out_id = ctx.args(op, 8)
    values = ctx.graph.values
    shape = _checked(ctx, op, q4gsw_shape(values, op.args, int_arg(ctx, g_id, op), op.name))
    _check_out(values, x_id, out_id, shape.n, op.name)
    try:
        _check_residual(values, r_id, out_id, op.name)
    except FormatError as e:
        raise FormatError(str(e), field=ctx.where(op)) from None
    bias = _check_bias(values, b_id, shape.n, op.name)
    _check_stored(ctx, op, b_id, bias, out_id)
    _check_scales(ctx, op, s_id)
    offsets = None
    if not isinstance(values[o_id], Null):
        offsets = scale_laid_offsets(ctx, op, [o_id], [shape.n], [shape.s_stride], [0],
                                     shape.k // shape.group, values[s_id].numel)
    bindings = [(0, x_id), (1, w_id), (2, out_id), (4, b_id if bias else s_id), (5, s_id),
                (6, r_id)]
    ctx.note_kernel(op, fused="q4 linear + residual add")
    await product(ctx, op, bindings, shape, bias, out_id, shape.n, s_id, "residual",
                  offsets=offsets)


def reference(read, values, args):
    x_id, w_id, s_id, g_id, b_id, o_id, r_id, out_id = args
    _check_residual(values, r_id, out_id, RESIDUAL)
    if isinstance(values[o_id], Null):
        linear = reference_q4gsw(read, values, (x_id, w_id, s_id, g_id, b_id, out_id), Q4GSW)
    else:
        linear = reference_q4gsw(read, values, (x_id, w_id, s_id, g_id, b_id, o_id, out_id),
                                 OFFSETS)
    return [r + v for r, v in zip(read(r_id).values, linear)]


define(RESIDUAL, build, reference, 8, half=True, choices=choices, sizes=sizes.linear)
