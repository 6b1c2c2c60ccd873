"""Padding (shaders/pad.wgsl), one output element per invocation over any rank <= 8:
``aten.constant_pad_nd.default [self, pad IntList, value Double|Int, out]`` (what
``F.pad(x, pad, value=v)`` becomes; the Vulkan partitioner delegates it).

``pad`` holds (before, after) pairs from the last dim backwards, any of them negative
(which crops); each padded size must stay >= 0. Output element o of a dim reads input
``o - before`` when that lies in the input, else ``value`` (rounded as torch rounds a
Scalar into the tensor's dtype).
"""

from __future__ import annotations

import math

from ..errors import FormatError
from ..model import f32
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from .args import int_list, int_list_arg, scalar_value
from .common import check_rank, contiguous_strides, elementwise_workgroup
from .exec_ints import dispatch_per_element
from .registry import define

CONSTANT = 0  # pad.wgsl's modes

PARAMS = Uniform(("numel", "u32"), ("rank", "u32"), ("value", "f32"), ("shape", "vec8"),
                 ("in_shape", "vec8"), ("in_strides", "vec8"), ("before", "vec8"))
KERNEL = Kernel("pad", (Binding(0, "x"), Binding(1, "y", "read_write")), PARAMS,
                snippets=("flat_index", "shape_index"),
                entries=(Entry("main", "pad_item", "params.numel"),))


def padded(name: str, shape, pad) -> tuple[tuple[int, ...], list[int]]:
    """(output shape, per-dim count before) of ``pad`` on ``shape``."""
    if len(pad) % 2 or len(pad) > 2 * len(shape):
        raise FormatError(f"{name}: pad {list(pad)} should hold (before, after) pairs for at "
                          f"most {len(shape)} dims")
    before = [0] * len(shape)
    out = list(shape)
    for k in range(len(pad) // 2):
        d = len(shape) - 1 - k
        before[d] = pad[2 * k]
        out[d] = shape[d] + pad[2 * k] + pad[2 * k + 1]
        if out[d] < 0:
            raise FormatError(f"{name}: pad {list(pad)} leaves dim {d} of {list(shape)} "
                              f"with size {out[d]}")
    return tuple(out), before


async def build(ctx, op):
    x_id, pad_id, value_id, out_id = ctx.args(op, 4)
    x, out = ctx.float_tensor(x_id, op), ctx.float_tensor(out_id, op)
    check_rank(op, x.shape)
    want, before = padded(op.name, x.shape, int_list_arg(ctx, pad_id, op))
    if tuple(out.shape) != want:
        raise FormatError(f"{op.name}: output shape {list(out.shape)}, expected {list(want)}",
                          field=ctx.where(op))
    value = float(scalar_value(ctx.graph.values, value_id, ctx.where(op)))
    if out.numel == 0:
        return
    # Offsets below 0 are held mod 2^32: the shader subtracts them as u32 and the wrapped
    # coordinate falls outside the input, as a negative one should.
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, half=ctx.half(x_id))
    params = PARAMS.pack(numel=out.numel, rank=len(want), value=value, shape=list(want),
                         in_shape=list(x.shape), in_strides=contiguous_strides(x.shape),
                         before=[b % 2 ** 32 for b in before])
    dispatch_per_element(ctx, op, pipeline, [(0, x_id), (1, out_id),
                                             (2, ctx.uniform(params, f"{op.name} params"))],
                         out_id, wg)


def reference(read, values, args):
    x = read(args[0])
    shape, before = padded("constant_pad_nd", x.shape, int_list(values[args[1]]))
    value = f32.to_f32(float(scalar_value(values, args[2], "constant_pad_nd")))
    strides = contiguous_strides(x.shape)
    out = []
    for flat in range(math.prod(shape)):
        rest, at, inside = flat, 0, True
        for d in range(len(shape) - 1, -1, -1):
            c = rest % shape[d] - before[d]
            rest //= shape[d]
            inside = inside and 0 <= c < x.shape[d]
            at += c * strides[d]
        out.append(x.values[at] if inside else value)
    return out


define("aten.constant_pad_nd.default", build, reference, 4, half=True)
