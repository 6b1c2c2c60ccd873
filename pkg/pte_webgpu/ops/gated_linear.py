"""``pte_webgpu.gated_linear [gate, up, program, weight, bias|Null, residual|Null, outs]``:
a two-input element-wise chain (``pte_webgpu.fused_elementwise``'s ``program``; SwiGLU,
silu(gate) * up: ``fused_elementwise.is_swiglu``) whose output only a linear reads, as
one op (runtime/fusion_gated.py rewrites a graph to use it): the down projection of a
Llama MLP, with its residual add folded in (``pte_webgpu.fused_linear``'s residual form)
or not. ``outs``: the chain's output, then the linear's (one with a residual, else 1 to
3 column ranges of the weight stacked at load, as fused_linear's). The matrix-vector
forms (decode) compute the chain as they load each input element (shaders/
matmul_parts.wgsl gemv_gated: the chain kernel's own steps and roundings), so a decode
step has one dispatch where it had two; the other forms (prefill's tiles) read the
chain's output, written by the chain's own dispatch first, only where they run. The
same design as the RMSNorm fold (ops/norm_linear.py): both are a matmul.InputPrologue.
"""

from __future__ import annotations

from math import prod

from ..errors import FormatError
from ..model.dtypes import without_leading_ones
from ..model.graph import Null, OpCall
from . import cpu_reference as cpu
from .fused_elementwise import chain_args, record_chain, reference_chain
from .fused_linear import MAX_SPLIT, fused_outputs, split_columns
from .matmul import InputPrologue, has_bias, product
from .matmul import reference as linear_reference
from .registry import define

GATED_LINEAR = "pte_webgpu.gated_linear"


class GatedInput(InputPrologue):
    """What ``matmul.product`` needs of the chain: its two inputs for the prologue (the
    first at binding 0, the second at the form's extra binding), and ``cover`` to record
    the chain's own dispatch for the forms without one."""

    def __init__(self, ctx, op, ins, steps, out_id: int):
        super().__init__(ctx, op, ins[0], ins[1], {"gate": tuple(steps)})
        self.ins, self.steps, self.out_id = ins, steps, out_id

    async def fallback(self, rows_above: int) -> None:
        await record_chain(self.ctx, self.op, self.ins, self.steps, self.out_id, rows_above)


def _parts(ctx, op):
    """(chain inputs, steps, chain output, weight, bias, residual, linear outputs)."""
    g_id, u_id, p_id, w_id, b_id, r_id, outs_id = ctx.args(op, 7)
    items = fused_outputs(ctx.graph.values, outs_id)
    residual = not isinstance(ctx.graph.values[r_id], Null)
    if not 2 <= len(items) <= MAX_SPLIT + 1 or (residual and len(items) != 2):
        raise FormatError(f"{op.name}: outputs should be the chain's and 1 to {MAX_SPLIT} "
                          f"linears' (1 with a residual), found {len(items)}",
                          field=ctx.where(op))
    # the chain's arguments as fused_elementwise reads them: [gate, up, program, out]
    ins, steps, h_id = chain_args(ctx, OpCall(op.name, (g_id, u_id, p_id, items[0]), op.node_id))
    if len(ins) != 2:
        raise FormatError(f"{op.name}: a chain of two inputs", field=ctx.where(op))
    return ins, steps, h_id, w_id, b_id, (r_id if residual else None), items[1:]


async def build(ctx, op):
    ins, steps, h_id, w_id, b_id, r_id, outs = _parts(ctx, op)
    h, w = ctx.float_tensor(h_id, op), ctx.float_tensor(w_id, op)
    for vid in ins:
        if tuple(ctx.float_tensor(vid, op).shape) != tuple(h.shape):
            raise FormatError(f"{op.name}: chain input {vid} and output {list(h.shape)} "
                              "differ", field=ctx.where(op))
    if not h.shape or h.numel == 0 or len(w.shape) != 2 or w.shape[1] != h.shape[-1]:
        raise FormatError(f"{op.name}: chain output {list(h.shape)} and weight "
                          f"{list(w.shape)} must be [..., K] (not empty) and [N, K]",
                          field=ctx.where(op))
    (n, k) = w.shape
    m = h.numel // k
    widths = [ctx.float_tensor(o, op).shape[-1] if ctx.tensor(o, op).shape else 0 for o in outs]
    if sum(widths) != n or any(prod(ctx.tensor(o, op).shape) != m * c
                               for o, c in zip(outs, widths)):
        raise FormatError(f"{op.name}: outputs of widths {widths} should hold {m} rows of the "
                          f"weight's {n} columns", field=ctx.where(op))
    if r_id is not None and tuple(ctx.float_tensor(r_id, op).shape) != tuple(
            ctx.tensor(outs[0], op).shape):
        raise FormatError(f"{op.name}: residual and output shapes differ", field=ctx.where(op))
    bias = has_bias(ctx, op, b_id, n)
    bindings = [(0, h_id), (1, w_id), (2, outs[0]), (4, b_id if bias else w_id)]
    if r_id is not None:
        epilogue = "residual"
        bindings.append((5, r_id))
    else:
        epilogue = ("", "", "split2", "split3")[len(outs)]
        bindings += [(5 + i, o) for i, o in enumerate(outs[1:])]
    n0 = widths[0] if len(outs) > 1 else 0
    n1 = n0 + widths[1] if len(outs) > 2 else 0
    ctx.note_kernel(op, fused=f"{len(steps)} element-wise ops + linear"
                    + (" + residual add" if r_id is not None else ""))
    await product(ctx, op, bindings, m, n, k, bias, outs[0], widths[0], epilogue, n0, n1,
                  prologue=GatedInput(ctx, op, ins, steps, h_id))


def reference(read, values, args):
    g_id, u_id, p_id, w_id, b_id, r_id, outs_id = args
    h_id, *outs = fused_outputs(values, outs_id)
    h = reference_chain(read, values, (g_id, u_id, p_id, h_id))
    as_input = cpu.Array(tuple(values[h_id].shape), h)
    whole = linear_reference(lambda vid: as_input if vid == h_id else read(vid), values,
                             (h_id, w_id, b_id, None))
    if not isinstance(values[r_id], Null):
        return [h, [r + v for r, v in zip(read(r_id).values, whole)]]
    return [h] + split_columns(whole, values[w_id].shape[0], [values[o].shape[-1] for o in outs])


def sizes(op, shape, integer, values):
    return gated_sizes(shape, values, op.args[0], op.args[5], op.args[-1])


def gated_sizes(shape, values, g_id: int, r_id: int, outs_id: int) -> dict:
    """The chain's output as its first input; the linear's as fused_linear's: the
    residual's, else the input's rows in the output's rank (runtime/fusion_gated.py fuses
    only where the two agree but for leading 1s). Also the 4-bit form's
    (ops/linear_q4_gated.py)."""
    items = fused_outputs(values, outs_id)
    out = {items[0]: tuple(shape(g_id))}
    if not isinstance(values[r_id], Null):
        out[items[1]] = tuple(shape(r_id))
        return out
    lead = without_leading_ones(shape(g_id)[:-1])
    for o in items[1:]:
        rank = len(values[o].shape)
        out[o] = (1,) * (rank - 1 - len(lead)) + lead + (values[o].shape[-1],)
    return out


define(GATED_LINEAR, build, reference, 7, half=True, sizes=sizes)
