"""``aten.pixel_shuffle.default [self (*, C r^2, H, W), upscale_factor r, out (*, C, H r,
W r)]``: a strided copy (copying.strided_copy, shaders/strided_copy.wgsl), output
element (b, c, h, i, w, j) read from input (b, c, i, j, h, w). ``nn.PixelUnshuffle``
needs no op of its own: the export writes it as view_copy, permute_copy, view_copy.
"""

from __future__ import annotations

import math

from ..errors import FormatError
from . import cpu_reference as cpu
from .args import int_arg
from .common import contiguous_strides
from .copying import strided_copy
from .registry import define


def _layout(name: str, shape, r: int, where=None):
    """(copy shape, source strides, output shape) of a pixel shuffle of ``shape``."""
    if r < 1 or len(shape) < 3 or shape[-3] % (r * r):
        raise FormatError(f"{name}: input {list(shape)} with upscale_factor {r}: needs rank "
                          f">= 3 and channels divisible by {r * r}", field=where)
    lead = math.prod(shape[:-3])
    c, h, w = shape[-3] // (r * r), shape[-2], shape[-1]
    src = contiguous_strides([lead, c, r, r, h, w])  # the input seen as (B, C, r, r, H, W)
    copy_shape = [lead, c, h, r, w, r]
    return copy_shape, [src[0], src[1], src[4], src[2], src[5], src[3]], \
        tuple(shape[:-3]) + (c, h * r, w * r)


async def build(ctx, op):
    x_id, r_id, out_id = ctx.args(op, 3)
    x, out = ctx.tensor(x_id, op), ctx.tensor(out_id, op)
    shape, src_strides, want = _layout(op.name, x.shape, int_arg(ctx, r_id, op), ctx.where(op))
    if tuple(out.shape) != want:
        raise FormatError(f"{op.name}: output shape {list(out.shape)}, expected {list(want)}",
                          field=ctx.where(op))
    await strided_copy(ctx, op, x_id, out_id, shape, src_strides, contiguous_strides(shape))


def reference(read, values, args):
    x = read(args[0])
    shape, src_strides, _ = _layout("pixel_shuffle", x.shape, int(values[args[1]].value))
    return [x.values[i] for i in cpu.strided_index(shape, src_strides)]


define("aten.pixel_shuffle.default", build, reference, 3, half=True)
