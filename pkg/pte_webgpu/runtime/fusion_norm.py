"""Load-time fusion, RMSNorm into the linear after it (fusion.py runs it after the linears
are stacked): an ``et_vk.rms_norm`` whose output only feeds, through reshapes, the input
of one float linear (``aten.linear`` or a stacked ``pte_webgpu.fused_linear`` without a
residual) becomes one ``pte_webgpu.norm_linear`` at the linear's place
(ops/norm_linear.py), and one feeding a 4-bit linear (``et_vk.linear_q4gsw``, with
offsets, or stacked) one ``pte_webgpu.norm_linear_q4gsw`` (ops/linear_q4_norm.py): a
Llama layer's two norms and the final one stop being dispatches of their own in a
decode step. The norm's output stays a tensor of the graph: the
linear's forms without the prologue (prefill's tiles) read it, written by the norm's own
dispatch in the same op.
"""

from __future__ import annotations

from ..model.dtypes import without_leading_ones
from ..model.graph import ListValue, Null, OpCall, TensorValue
from ..ops.fused_linear import FUSED as FUSED_LINEAR
from ..ops.fused_linear import fused_outputs
from ..ops.linear_q4 import ARG_COUNTS as Q4_LINEARS
from ..ops.linear_q4 import FUSED as FUSED_Q4
from ..ops.linear_q4_norm import NORM_Q4
from ..ops.norm_linear import NORM_LINEAR
from .views import placed_ops, forward_views

RMS_NORM = "et_vk.rms_norm.default"
LINEAR = "aten.linear.default"


def fold_norms(f) -> None:
    """``f``: a fusion._Fusion, its linears already stacked."""
    for i, op in placed_ops(f, {RMS_NORM: 4}):
        _fold(f, i, op)


def _fold(f, i: int, norm: OpCall) -> None:
    x_id, g_id, eps_id, normed = norm.args
    x, g, out = f._tensor(x_id), f._tensor(g_id), f._tensor(normed)
    if x is None or g is None or out is None or not x.shape or not g.is_constant \
            or g.mem_obj_id >= 0 or out.dtype != x.dtype or tuple(out.shape) != tuple(x.shape) \
            or normed in f.keep:
        return
    views, vid, reader = forward_views(f, normed)
    if reader is None or reader <= i:
        return
    lin = f.placed[reader]
    if lin.name in Q4_LINEARS:
        _fold_q4(f, i, norm, reader, views, vid)
        return
    parts = linear_parts(f, lin, vid)
    if parts is None or not (parts[2] is None or isinstance(f.values[parts[2]], Null)):
        return  # (a residual folded into the linear: the norm fold keeps it out)
    w_id, b_id, _, outs = parts
    w = f._tensor(w_id)
    lead = without_leading_ones(x.shape[:-1])
    if w is None or len(w.shape) != 2 or w.shape[1] != x.shape[-1] or w.dtype != x.dtype \
            or x.dtype.name not in ("float32", "float16") \
            or any(without_leading_ones(f.values[o].shape[:-1]) != lead for o in outs):
        return  # the outputs' rows laid out as the norm input's (leading 1s aside)
    items = f._add(ListValue("value_list", (normed,) + tuple(outs)))
    for j in [i, reader] + views:
        f._unlink(j)
    f._link(reader, OpCall(NORM_LINEAR, (x_id, g_id, eps_id, w_id, b_id, items), lin.node_id))
    f._count("rms_norm + linear")


def _fold_q4(f, i: int, norm: OpCall, reader: int, views: list, vid: int) -> None:
    """The norm into the 4-bit linear reading it (``vid``: the norm's output, through
    views that keep its shape: the linear's output is shaped by its input's rows)."""
    x_id, g_id, eps_id, normed = norm.args
    lin = f.placed[reader]
    x, g = f.values[x_id], f.values[g_id]
    outs = q4_outputs(f, lin, vid, Q4_LINEARS)
    if outs is None or g.dtype != x.dtype or x.dtype.name not in ("float32", "float16") \
            or tuple(f.values[vid].shape) != tuple(f.values[normed].shape):
        return
    items = f._add(ListValue("value_list", (normed,) + tuple(outs)))
    for j in [i, reader] + views:
        f._unlink(j)
    f._link(reader, OpCall(NORM_Q4, (x_id, g_id, eps_id) + tuple(lin.args[1:-1]) + (items,),
                           lin.node_id))
    f._count("rms_norm + q4 linear")


def q4_outputs(f, lin: OpCall, vid: int, counts: dict):
    """The outputs of a 4-bit linear (``counts``: the names taken, their argument counts)
    reading ``vid`` as its input and nowhere else, else None."""
    if counts.get(lin.name) != len(lin.args) or lin.args[0] != vid or vid in lin.args[1:]:
        return None
    outs = fused_outputs(f.values, lin.args[-1]) if lin.name == FUSED_Q4 else lin.args[-1:]
    if not outs or not all(isinstance(f.values[o], TensorValue) for o in outs):
        return None
    return tuple(outs)


def linear_parts(f, lin: OpCall, vid: int):
    """(weight, bias, residual or None, outputs) of a float linear (plain or stacked)
    reading ``vid`` as its input and nowhere else, else None."""
    if lin.args[0] != vid or vid in lin.args[1:]:
        return None
    if lin.name == LINEAR and len(lin.args) == 4:
        w_id, b_id, r_id, outs = lin.args[1], lin.args[2], None, (lin.args[3],)
    elif lin.name == FUSED_LINEAR and len(lin.args) == 5:
        w_id, b_id, r_id = lin.args[1:4]
        outs = fused_outputs(f.values, lin.args[4])
    else:
        return None
    if not outs or not all(isinstance(f.values[o], TensorValue) for o in outs):
        return None
    return w_id, b_id, r_id, outs
