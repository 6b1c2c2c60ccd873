"""``pte_webgpu.fused_linear [x, weight, bias|Null, residual|Null, outs]``: linears that
share an input as one product over their weights stacked at load (runtime/fusion.py
rewrites a graph to use it), each column range written to its own output, or a linear
with the residual add after it folded in. The matmul family's forms (ops/matmul.py)
with another epilogue: one choice rule, the same kernels."""

from __future__ import annotations

from math import prod

from ..errors import FormatError
from ..model.graph import Null
from .matmul import has_bias, linear_dims, product, reference
from .registry import define

FUSED = "pte_webgpu.fused_linear"
MAX_SPLIT = 3  # outputs of one fused linear: bindings 2, 5, 6


def fused_outputs(values, outs_id: int) -> tuple:
    outs = values[outs_id]
    return outs.items if getattr(outs, "kind", "") == "value_list" else ()


async def build_fused(ctx, op):
    """``[x, weight, bias|Null, residual|Null, outs]``: one product against ``weight``
    [N, K], the weights of linears that read ``x`` stacked at load; output column ranges
    go to ``outs`` in order (each ``[..., N_i]``). With a residual (one output):
    ``out = residual + linear`` (an add.Tensor folded into the epilogue)."""
    x_id, w_id, b_id, r_id, outs_id = ctx.args(op, 5)
    outs = fused_outputs(ctx.graph.values, outs_id)
    residual = not isinstance(ctx.graph.values[r_id], Null)
    if not 1 <= len(outs) <= MAX_SPLIT or (residual and len(outs) != 1):
        raise FormatError(f"{op.name}: 1 to {MAX_SPLIT} outputs (1 with a residual), found "
                          f"{len(outs)}", field=ctx.where(op))
    x, w = ctx.float_tensor(x_id, op), ctx.float_tensor(w_id, op)
    widths = [ctx.float_tensor(o, op).shape[-1] if ctx.tensor(o, op).shape else 0
              for o in outs]
    if residual:
        out, r = ctx.float_tensor(outs[0], op), ctx.float_tensor(r_id, op)
        lead = tuple(x.shape[:-1])
        if tuple(r.shape) != tuple(out.shape) or out.numel != prod(lead) * w.shape[0]:
            raise FormatError(f"{op.name}: residual {list(r.shape)} and output "
                              f"{list(out.shape)} should hold input rows x N", field=ctx.where(op))
        m, n, k = linear_dims(x.shape, w.shape, lead + (w.shape[0],), op.name)
    else:
        for o, width in zip(outs, widths):
            linear_dims(x.shape, (width, x.shape[-1] if x.shape else 0),
                        ctx.tensor(o, op).shape, op.name)
        m, n, k = linear_dims(x.shape, w.shape, tuple(x.shape[:-1]) + (sum(widths),), op.name)
    bias = has_bias(ctx, op, b_id, n)
    bindings = [(0, x_id), (1, w_id), (2, outs[0]), (4, b_id if bias else w_id)]
    epilogue = "residual" if residual else ("", "", "split2", "split3")[len(outs)]
    bindings += [(5, r_id)] if residual else [(5 + i, o) for i, o in enumerate(outs[1:])]
    n0 = widths[0] if len(outs) > 1 else 0
    n1 = n0 + widths[1] if len(outs) > 2 else 0
    ctx.note_kernel(op, fused="linear + residual add" if residual else f"{len(outs)} linears")
    await product(ctx, op, bindings, m, n, k, bias, outs[0], widths[0], epilogue, n0, n1)


def reference_fused(read, values, args):
    x_id, w_id, b_id, r_id, outs_id = args
    whole = reference(read, values, (x_id, w_id, b_id, None))
    outs = fused_outputs(values, outs_id)
    if not isinstance(values[r_id], Null):
        return [[r + v for r, v in zip(read(r_id).values, whole)]]
    return split_columns(whole, values[w_id].shape[0], [values[o].shape[-1] for o in outs])


def split_columns(whole, n: int, widths) -> list:
    """Rows of ``n`` columns (flat) cut into consecutive column ranges of ``widths``."""
    parts, start = [], 0
    for width in widths:
        parts.append([v for i, v in enumerate(whole) if start <= i % n < start + width])
        start += width
    return parts


def sizes_fused(op, shape, integer, values):
    x_id, _, _, r_id, outs_id = op.args
    if not isinstance(values[r_id], Null):
        return {fused_outputs(values, outs_id)[0]: shape(r_id)}
    lead = tuple(shape(x_id)[:-1])
    return {o: lead + (values[o].shape[-1],) for o in fused_outputs(values, outs_id)}


define(FUSED, build_fused, reference_fused, 5, half=True, sizes=sizes_fused)
