"""``pte_webgpu.norm_linear_q4gsw [x, norm_weight, eps, weights, scales, group_size,
bias|Null, (offsets | layout, offsets|Null), outs]``: an ``et_vk.rms_norm`` whose output
only a 4-bit linear reads, as one op (runtime/fusion_norm.py rewrites a graph to use it),
the 4-bit twin of ops/norm_linear.py. Between eps and ``outs`` the linear's own arguments
but its input and output(s), told apart by their count: 4 (et_vk.linear_q4gsw), 5 (its
offsets after the bias: pte_webgpu.linear_q4gsw_offsets), 6 (layout and offsets list:
the stacked pte_webgpu.fused_linear_q4gsw). ``outs``: the norm's output, then the
linear's. The one-row forms (wide, keep: decode) normalise their row themselves
(shaders/linear_q4_parts.wgsl row_norm): a decode step has one dispatch where it had two;
the other forms read the norm's output, written by the rms_norm family's own dispatch
first, only where they run.
"""

from __future__ import annotations

from ..errors import FormatError
from ..model.graph import OpCall
from .fused_linear import fused_outputs
from .linear_q4 import ARG_COUNTS, FUSED, plan, product, reference_fused, reference_q4gsw
from .norm_linear import NormInput, normed_reference
from .registry import define
from .rms_norm import F32_EPS

NORM_Q4 = "pte_webgpu.norm_linear_q4gsw"
_INNER = {count: name for name, count in ARG_COUNTS.items()}  # the linear by its own count


def _inner(values, args):
    """(the linear as an op of its own, reading the norm's output; the norm's output; the
    linear's outputs): FormatError when ``args`` are no such op's."""
    outs = list(fused_outputs(values, args[-1]))
    name = _INNER.get(len(args) - 2)
    if name is None or len(outs) < 2 or (name != FUSED and len(outs) != 2):
        raise FormatError(f"{NORM_Q4}: the norm's 3 arguments, a 4-bit linear's 4 to 6 and "
                          f"the outputs (the norm's, then the linear's), found {len(args)} "
                          f"arguments and {len(outs)} outputs")
    last = args[-1] if name == FUSED else outs[1]  # fused: the outputs are passed apart
    return OpCall(name, (outs[0],) + tuple(args[3:-1]) + (last,)), outs[0], outs[1:]


async def build(ctx, op):
    try:
        inner, normed, outs = _inner(ctx.graph.values, op.args)
    except FormatError as e:
        raise FormatError(str(e), field=ctx.where(op)) from None
    x_id, g_id, eps_id = op.args[:3]
    x, g, y = (ctx.float_tensor(i, op) for i in (x_id, g_id, normed))
    if not x.shape or x.numel == 0 or tuple(y.shape) != tuple(x.shape) or g.numel < x.shape[-1]:
        raise FormatError(f"{op.name}: input {list(x.shape)}, norm weight {list(g.shape)} and "
                          f"norm output {list(y.shape)} do not agree", field=ctx.where(op))
    p = plan(ctx, op, inner.args, outs)
    width = x.shape[-1]
    norm = NormInput(ctx, op, (x_id, g_id, normed), x.numel // width, width,
                     ctx.float_scalar(eps_id, F32_EPS))
    ctx.note_kernel(op, fused="rms_norm + " + (f"{len(outs)} q4 linears" if len(outs) > 1
                                                else "q4 linear"))
    await product(ctx, op, **p, prologue=norm)


def reference(read, values, args):
    inner, normed, outs = _inner(values, args)
    y = normed_reference(read, values, *args[:3], normed)
    read_normed = lambda vid: y if vid == normed else read(vid)  # noqa: E731
    if inner.name == FUSED:
        return [y.values] + reference_fused(read_normed, values, inner.args, outs)
    return [y.values, reference_q4gsw(read_normed, values, inner.args, inner.name)]


def sizes(op, shape, integer, values):
    """The norm's output as its input; the linear's rows as the input's."""
    inner, normed, outs = _inner(values, op.args)
    lead = tuple(shape(op.args[0])[:-1])
    return {normed: tuple(shape(op.args[0])),
            **{o: lead + (values[o].shape[-1],) for o in outs}}


define(NORM_Q4, build, reference, None, half=True, sizes=sizes)
