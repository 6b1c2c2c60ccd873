"""Elementwise binary ops with NumPy broadcasting (binary.wgsl).

``aten.add.Tensor`` / ``aten.sub.Tensor`` ``[self, other, alpha, out]``: self ± alpha·other;
``aten.mul.Tensor`` / ``aten.div.Tensor`` ``[self, other, out]`` (no alpha).
``gather`` is the same index math with one operand: a copy through any strides
(view.py's permute).
"""

from __future__ import annotations

from math import prod

from .. import f32
from ..errors import FormatError
from .common import check_rank, elementwise_workgroup, vec8
from .registry import register

# op name -> (shader op code, whether the op carries an alpha argument)
OPS = {
    "aten.add.Tensor": (0, True),
    "aten.sub.Tensor": (1, True),
    "aten.mul.Tensor": (2, False),
    "aten.div.Tensor": (3, False),
}


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


def _params(numel: int, out_shape, a_strides, b_strides, alpha=1.0, same=0) -> bytes:
    return (f32.pack("<IIfI", numel, len(out_shape), alpha, same)
            + vec8(out_shape) + vec8(a_strides) + vec8(b_strides))


async def gather(ctx, op, x_id: int, out_id: int, out_shape, src_strides) -> None:
    """out (contiguous, ``out_shape``) = x read at ``sum(coord[d] * src_strides[d])``."""
    numel = prod(out_shape)
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline("binary", {"wg_size": wg}, "gather", half=ctx.half(out_id))
    uniform = ctx.uniform(_params(numel, out_shape, src_strides, []), f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, x_id), (2, out_id), (3, uniform)],
                 ctx.grid(-(-numel // wg)))


@register(*OPS, half=True)
async def build(ctx, op):
    code, has_alpha = OPS[op.name]
    if has_alpha:
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
    same = int(a.shape == out.shape == b.shape)
    params = _params(out.numel, out.shape, a_strides, b_strides, alpha, same)
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline("binary", {"wg_size": wg, "op": code}, half=ctx.half(out_id))
    uniform = ctx.uniform(params, f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, a_id), (1, b_id), (2, out_id), (3, uniform)],
                 ctx.grid(-(-out.numel // wg)))
