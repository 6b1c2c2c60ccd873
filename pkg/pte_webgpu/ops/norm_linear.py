"""``pte_webgpu.norm_linear [x, norm_weight, eps, weight, bias|Null, outs]``: an
``et_vk.rms_norm`` whose output only a linear reads (one, or several stacked:
``pte_webgpu.fused_linear``), as one op (runtime/fusion_norm.py rewrites a graph to use
it). ``outs``: the norm's output, then the linear's outputs (column ranges of the weight
stacked at load, as fused_linear's). The matrix-vector forms (decode) normalise their
block's rows themselves (shaders/matmul_parts.wgsl gemv_norm), so a decode step has one
dispatch where it had two; the other forms (prefill's tiles) read the norm's output,
written by the rms_norm family's own dispatch first, only where they run.
"""

from __future__ import annotations

from math import prod

from ..errors import FormatError
from ..model.dtypes import without_leading_ones
from . import cpu_reference as cpu
from .args import number
from .fused_linear import MAX_SPLIT, fused_outputs, split_columns
from .matmul import InputPrologue, has_bias, product
from .matmul import reference as linear_reference
from .registry import define
from .rms_norm import F32_EPS, pick_and_record, rms_norm

NORM_LINEAR = "pte_webgpu.norm_linear"


class NormInput(InputPrologue):
    """What a product (``matmul.product``, ``linear_q4.product``) needs of the norm: its
    input and weight for the prologue (``bind``), and ``cover`` to record the norm's own
    dispatch for the forms without one."""

    def __init__(self, ctx, op, ids, rows: int, width: int, eps: float):
        super().__init__(ctx, op, ids[0], ids[1], {"eps": eps})
        self.ids, self.rows, self.width = ids, rows, width

    async def fallback(self, rows_above: int) -> None:
        linear = {k: self.ctx.kernels[-1].get(k) for k in ("variant", "picked")}
        await pick_and_record(self.ctx, self.op, self.ids, self.rows, self.width,
                              self.record["eps"], rows_above)
        # inspect shows the linear's variant, and the norm's beside it
        self.ctx.note_kernel(self.op, norm=self.ctx.kernels[-1].get("variant"), **linear)


def normed_reference(read, values, x_id: int, g_id: int, eps_id: int, normed_id: int):
    """The norm's output on the CPU (ops/rms_norm.py), rounded to its stored type."""
    x = read(x_id)
    code = "e" if values[normed_id].dtype.name == "float16" else "f"
    return cpu.Array(x.shape, [cpu.round_one(v, code) for v in
                               rms_norm(x, read(g_id), number(values[eps_id], F32_EPS))])


async def build(ctx, op):
    x_id, g_id, eps_id, w_id, b_id, outs_id = ctx.args(op, 6)
    items = fused_outputs(ctx.graph.values, outs_id)
    if not 2 <= len(items) <= MAX_SPLIT + 1:
        raise FormatError(f"{op.name}: outputs should be the norm's and 1 to {MAX_SPLIT} "
                          f"linears', found {len(items)}", field=ctx.where(op))
    normed, outs = items[0], items[1:]
    x, g, w = (ctx.float_tensor(i, op) for i in (x_id, g_id, w_id))
    if not x.shape or x.numel == 0 or len(w.shape) != 2:
        raise FormatError(f"{op.name}: input {list(x.shape)} and weight {list(w.shape)} must "
                          "be [..., K] (not empty) and [N, K]", field=ctx.where(op))
    (n, k), width = w.shape, x.shape[-1]
    m = x.numel // width
    if k != width or g.numel < width or ctx.float_tensor(normed, op).numel != x.numel:
        raise FormatError(f"{op.name}: input {list(x.shape)}, norm weight {list(g.shape)}, "
                          f"norm output and weight {list(w.shape)} do not agree on K",
                          field=ctx.where(op))
    widths = [ctx.float_tensor(o, op).shape[-1] if ctx.tensor(o, op).shape else 0 for o in outs]
    if sum(widths) != n or any(prod(ctx.tensor(o, op).shape) != m * c
                               for o, c in zip(outs, widths)):
        raise FormatError(f"{op.name}: outputs of widths {widths} should hold {m} rows of the "
                          f"weight's {n} columns", field=ctx.where(op))
    bias = has_bias(ctx, op, b_id, n)
    bindings = [(0, normed), (1, w_id), (2, outs[0]), (4, b_id if bias else w_id)]
    bindings += [(5 + i, o) for i, o in enumerate(outs[1:])]
    epilogue = ("", "", "split2", "split3")[len(outs)]
    n0 = widths[0] if len(outs) > 1 else 0
    n1 = n0 + widths[1] if len(outs) > 2 else 0
    ctx.note_kernel(op, fused=f"rms_norm + {len(outs)} linear" + ("s" if len(outs) > 1 else ""))
    norm = NormInput(ctx, op, (x_id, g_id, normed), m, width, ctx.float_scalar(eps_id, F32_EPS))
    await product(ctx, op, bindings, m, n, k, bias, outs[0], widths[0], epilogue, n0, n1,
                  prologue=norm)


def reference(read, values, args):
    x_id, g_id, eps_id, w_id, b_id, outs_id = args
    items = fused_outputs(values, outs_id)
    as_input = normed_reference(read, values, x_id, g_id, eps_id, items[0])
    whole = linear_reference(lambda vid: as_input if vid == x_id else read(vid), values,
                             (x_id, w_id, b_id, None))
    widths = [values[o].shape[-1] for o in items[1:]]
    return [as_input.values] + split_columns(whole, values[w_id].shape[0], widths)


def sizes(op, shape, integer, values):
    """The norm's output as its input; each linear's the input's rows in the output's
    rank (fusion_norm.py fuses only where the two agree but for leading 1s)."""
    x_id, outs_id = op.args[0], op.args[-1]
    lead = without_leading_ones(shape(x_id)[:-1])
    items = fused_outputs(values, outs_id)
    out = {items[0]: tuple(shape(x_id))}
    for o in items[1:]:
        rank = len(values[o].shape)
        out[o] = (1,) * (rank - 1 - len(lead)) + lead + (values[o].shape[-1],)
    return out


define(NORM_LINEAR, build, reference, 6, half=True, sizes=sizes)
