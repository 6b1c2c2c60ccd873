"""Elementwise binary ops with broadcasting and alpha (binary.wgsl).

``aten.add.Tensor [self, other, alpha, out]``; the shader also carries sub/mul/div
so the rest of the family only needs registering.
"""

from __future__ import annotations

import struct

from ..errors import FormatError, UnsupportedError
from .registry import register

WORKGROUP = 256
MAX_RANK = 8
OP_CODES = {"aten.add.Tensor": 0}


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


def _vec8(values: list[int]) -> bytes:
    return struct.pack("<8I", *(list(values) + [0] * (MAX_RANK - len(values))))


@register(*OP_CODES)
async def build(ctx, op):
    a_id, b_id, alpha_id, out_id = ctx.args(op, 4)
    a, b, out = (ctx.float_tensor(i, op) for i in (a_id, b_id, out_id))
    if len(out.shape) > MAX_RANK:
        raise UnsupportedError(f"{op.name}: rank {len(out.shape)} > {MAX_RANK}")
    alpha = ctx.float_scalar(alpha_id, 1.0)
    a_strides = broadcast_strides(a.shape, out.shape, op.name)
    b_strides = broadcast_strides(b.shape, out.shape, op.name)
    same = int(a.shape == out.shape == b.shape)
    params = (struct.pack("<IIfI", out.numel, len(out.shape), alpha, same)
              + _vec8(list(out.shape)) + _vec8(a_strides) + _vec8(b_strides))
    wg = min(WORKGROUP, ctx.limit("maxComputeInvocationsPerWorkgroup", WORKGROUP))
    pipeline = await ctx.pipeline("binary", {"wg_size": wg, "op": OP_CODES[op.name]})
    uniform = ctx.uniform(params, f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, a_id), (1, b_id), (2, out_id), (3, uniform)],
                 ctx.grid(-(-out.numel // wg)))
