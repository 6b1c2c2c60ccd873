"""``et_vk.rms_norm.default [in, weight, eps, out]``: one workgroup per row (rms_norm.wgsl)."""

from __future__ import annotations

import struct

from ..errors import FormatError, UnsupportedError
from .registry import register

WORKGROUP = 64
F32_EPS = 2.0 ** -23  # PyTorch's default eps for rms_norm (float32 machine epsilon)


def workgroup_size(max_invocations: int) -> int:
    """64 lanes, clamped to the adapter and floored to a power of two (the tree halves)."""
    size = min(WORKGROUP, max_invocations, 256)
    return 1 << (size.bit_length() - 1)


@register("et_vk.rms_norm.default")
async def build(ctx, op):
    x_id, w_id, eps_id, out_id = ctx.args(op, 4)
    x, w, out = ctx.float_tensor(x_id, op), ctx.float_tensor(w_id, op), ctx.float_tensor(out_id, op)
    if not x.shape or x.numel == 0:
        raise UnsupportedError(f"{op.name}: input has no elements (shape {list(x.shape)})")
    width = x.shape[-1]
    rows = x.numel // width
    if w.numel < width:
        raise FormatError(f"{op.name}: weight has {w.numel} elements, the row width is {width}",
                          field=f"value {w_id}")
    if out.numel != x.numel:
        raise FormatError(f"{op.name}: output has {out.numel} elements, input {x.numel}",
                          field=f"value {out_id}")
    eps = ctx.float_scalar(eps_id, F32_EPS)
    wg = workgroup_size(ctx.limit("maxComputeInvocationsPerWorkgroup", 256))
    pipeline = await ctx.pipeline("rms_norm", {"wg_size": wg})
    params = ctx.uniform(struct.pack("<IIfI", rows, width, eps, 0), "rms_norm params")
    ctx.dispatch(op, pipeline, [(0, x_id), (1, w_id), (2, out_id), (3, params)],
                 ctx.grid(rows))
