"""``pte_webgpu.gated_linear_q4gsw [gate, up, program, weights, scales, group_size,
bias|Null, offsets|Null, residual|Null, outs]``: a two-input element-wise chain
(``pte_webgpu.fused_elementwise``'s ``program``; SwiGLU) whose output only a 4-bit linear
reads (et_vk.linear_q4gsw, with offsets, or with its residual add folded in:
ops/linear_q4_residual.py), as one op (runtime/fusion_gated.py rewrites a graph to use
it), the 4-bit twin of ops/gated_linear.py. ``outs``: the chain's output, then the
linear's. The one-row forms (wide, keep: decode) compute the chain as they load the row
(shaders/linear_q4_parts.wgsl row_gated), and so do the gemv forms where K % 8 == 0
(x_gated) outside the CPU rule: a Llama MLP's element-wise dispatch goes from a decode
step; the other forms read the chain's output, written by the chain's own dispatch
first, only where they run.
"""

from __future__ import annotations

from ..errors import FormatError
from ..model.graph import Null, OpCall
from . import cpu_reference as cpu
from .fused_elementwise import chain_args, reference_chain
from .fused_linear import fused_outputs
from .gated_linear import GatedInput, gated_sizes
from .linear_q4 import OFFSETS, Q4GSW, plan, product, reference_q4gsw
from .linear_q4_residual import RESIDUAL, check_residual, inner_args
from .linear_q4_residual import reference as residual_reference
from .registry import define

GATED_Q4 = "pte_webgpu.gated_linear_q4gsw"


def _split(values, args):
    """(the chain's [gate, up, program, output]; the 4-bit linear as an op of its own
    reading the chain's output): FormatError when ``args`` are no such op's."""
    if len(args) != 10:
        raise FormatError(f"{GATED_Q4}: 10 arguments, found {len(args)}")
    g_id, u_id, p_id, w_id, s_id, gs_id, b_id, o_id, r_id, outs_id = args
    items = list(fused_outputs(values, outs_id))
    if len(items) != 2:
        raise FormatError(f"{GATED_Q4}: outputs should be the chain's and the linear's, "
                          f"found {len(items)}")
    h_id, out_id = items
    if not isinstance(values[r_id], Null):
        inner = OpCall(RESIDUAL, (h_id, w_id, s_id, gs_id, b_id, o_id, r_id, out_id))
    elif isinstance(values[o_id], Null):
        inner = OpCall(Q4GSW, (h_id, w_id, s_id, gs_id, b_id, out_id))
    else:
        inner = OpCall(OFFSETS, (h_id, w_id, s_id, gs_id, b_id, o_id, out_id))
    return (g_id, u_id, p_id, h_id), inner


async def build(ctx, op):
    values = ctx.graph.values
    try:
        chain, inner = _split(values, op.args)
        if inner.name == RESIDUAL:
            check_residual(values, inner.args[6], inner.args[7], op.name)
    except FormatError as e:
        raise FormatError(str(e), field=ctx.where(op)) from None
    ins, steps, h_id = chain_args(ctx, OpCall(op.name, chain, op.node_id))
    h = ctx.float_tensor(h_id, op)
    if len(ins) != 2 or any(tuple(ctx.float_tensor(vid, op).shape) != tuple(h.shape)
                            for vid in ins):
        raise FormatError(f"{op.name}: a chain of two inputs shaped as its output "
                          f"{list(h.shape)}", field=ctx.where(op))
    residual = inner.name == RESIDUAL
    p = plan(ctx, op, inner_args(values, inner.args) if residual else inner.args)
    if residual:
        p["bindings"].append((6, inner.args[6]))
    ctx.note_kernel(op, fused=f"{len(steps)} element-wise ops + q4 linear"
                    + (" + residual add" if residual else ""))
    await product(ctx, op, **p, epilogue="residual" if residual else "",
                  prologue=GatedInput(ctx, op, ins, steps, h_id))


def reference(read, values, args):
    chain, inner = _split(values, args)
    h = reference_chain(read, values, chain)
    as_input = cpu.Array(tuple(values[chain[3]].shape), h)
    read_h = lambda vid: as_input if vid == chain[3] else read(vid)  # noqa: E731
    if inner.name == RESIDUAL:
        return [h, residual_reference(read_h, values, inner.args)]
    return [h, reference_q4gsw(read_h, values, inner.args, inner.name)]


def sizes(op, shape, integer, values):
    return gated_sizes(shape, values, op.args[0], op.args[8], op.args[-1])


define(GATED_Q4, build, reference, 10, half=True, sizes=sizes)
