"""Elementwise unary ops (unary.wgsl), ``[self, ..., out]`` on same-shape tensors.

``aten.rsqrt.default [self, out]``, ``aten.sigmoid.default [self, out]``,
``aten.pow.Tensor_Scalar [self, exponent, out]``, ``aten.add.Scalar [self, other,
alpha, out]``; and ``round_to_half`` for view.py's float32 -> float16 conversion.
"""

from __future__ import annotations

import math
import struct

from .common import elementwise_workgroup, number_arg, same_numel
from .registry import register

RSQRT, SIGMOID, SQUARE, POW, ADD, ROUND_HALF = range(6)
INT_EXP_LIMIT = 1 << 24  # beyond this every f32 is an even integer anyway


def pow_params(exponent) -> tuple[int, float, int, int]:
    """(shader op, exponent as f32, integer flag, odd flag) for ``pow(x, exponent)``."""
    e = float(exponent)
    if e == 2.0:
        return SQUARE, e, 0, 0
    is_int = math.isfinite(e) and e == int(e) and abs(e) < INT_EXP_LIMIT
    return POW, e, int(is_int), int(is_int and int(e) % 2 == 1)


def _params(numel: int, a: float = 0.0, int_exp: int = 0, odd_exp: int = 0) -> bytes:
    return struct.pack("<IfIIffII", numel, a, int_exp, odd_exp, math.inf, math.nan, 0, 0)


async def round_to_half(ctx, op, x_id: int, out_id: int) -> None:
    """float32 -> float16 values (both held as f32): round to float16's precision."""
    await _dispatch(ctx, op, x_id, out_id, ROUND_HALF, _params(ctx.tensor(out_id, op).numel))


async def _dispatch(ctx, op, x_id: int, out_id: int, code: int, params: bytes) -> None:
    ctx.float_tensor(x_id, op)
    out = ctx.float_tensor(out_id, op)
    same_numel(ctx, op, x_id, out_id)
    if out.numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline("unary", {"wg_size": wg, "op": code}, half=ctx.half(out_id))
    uniform = ctx.uniform(params, f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, x_id), (1, out_id), (2, uniform)],
                 ctx.grid(-(-out.numel // wg)))


@register("aten.rsqrt.default", "aten.sigmoid.default", half=True)
async def build_plain(ctx, op):
    x_id, out_id = ctx.args(op, 2)
    code = RSQRT if op.name == "aten.rsqrt.default" else SIGMOID
    await _dispatch(ctx, op, x_id, out_id, code, _params(ctx.tensor(out_id, op).numel))


@register("aten.pow.Tensor_Scalar", half=True)
async def build_pow(ctx, op):
    x_id, e_id, out_id = ctx.args(op, 3)
    code, e, int_exp, odd_exp = pow_params(number_arg(ctx, e_id, op))
    await _dispatch(ctx, op, x_id, out_id, code,
                    _params(ctx.tensor(out_id, op).numel, e, int_exp, odd_exp))


@register("aten.add.Scalar", half=True)
async def build_add_scalar(ctx, op):
    x_id, other_id, alpha_id, out_id = ctx.args(op, 4)
    # torch rounds both scalars to the tensor's float32 before multiplying.
    other = struct.unpack("<f", struct.pack("<f", float(number_arg(ctx, other_id, op))))[0]
    alpha = struct.unpack("<f", struct.pack("<f", ctx.float_scalar(alpha_id, 1.0)))[0]
    shift = struct.unpack("<f", struct.pack("<f", alpha * other))[0]
    await _dispatch(ctx, op, x_id, out_id, ADD, _params(ctx.tensor(out_id, op).numel, shift))
