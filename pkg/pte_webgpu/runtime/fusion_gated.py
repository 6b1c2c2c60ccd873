"""Load-time fusion, SwiGLU into the linear after it (fusion.py runs it after the chains
and norms are fused): a ``pte_webgpu.fused_elementwise`` that is SwiGLU as exported
(silu(gate) * up as sigmoid, mul, mul: ``fused_elementwise.is_swiglu``) whose output only
feeds, through reshapes, the input of one float linear (``aten.linear``, or a
``pte_webgpu.fused_linear``: the down projection with its residual add folded in, or
stacked) becomes one ``pte_webgpu.gated_linear`` at the linear's place
(ops/gated_linear.py), and one feeding a 4-bit linear (``et_vk.linear_q4gsw``, with
offsets, or with its residual add) one ``pte_webgpu.gated_linear_q4gsw``
(ops/linear_q4_gated.py): a Llama layer's element-wise dispatch goes from a decode step.
The chain's output stays a tensor of the graph: the linear's forms without the prologue
(prefill's tiles) read it, written by the chain's own dispatch in the same op. The same
shape of rewrite as fusion_norm.py's.
"""

from __future__ import annotations

from ..model.dtypes import without_leading_ones
from ..model.graph import ListValue, Null, OpCall
from ..ops.fused_elementwise import FUSED as FUSED_CHAIN
from ..ops.fused_elementwise import chain_steps, is_swiglu
from ..ops.gated_linear import GATED_LINEAR
from ..ops.linear_q4 import OFFSETS as Q4_OFFSETS
from ..ops.linear_q4 import Q4GSW
from ..ops.linear_q4_gated import GATED_Q4
from ..ops.linear_q4_residual import RESIDUAL as Q4_RESIDUAL
from .fusion_norm import linear_parts, q4_outputs
from .views import placed_ops, forward_views

LINEAR = "aten.linear.default"
Q4_INNER = {Q4GSW: 6, Q4_OFFSETS: 7, Q4_RESIDUAL: 8}  # the 4-bit linears, their arg counts
ENABLED = True  # tests turn this fold alone off, to compare its outputs with the chain's


def fold_gates(f) -> None:
    """``f``: a fusion._Fusion, its element-wise chains already fused."""
    if not ENABLED:
        return
    for i, op in placed_ops(f, {FUSED_CHAIN: 4}):
        _fold(f, i, op)


def _fold(f, i: int, chain: OpCall) -> None:
    g_id, u_id, p_id, h_id = chain.args
    steps = chain_steps(getattr(f.values[p_id], "items", ()))
    h = f._tensor(h_id)
    if not is_swiglu(2, steps) or h is None or not h.shape or h_id in f.keep \
            or h.dtype.name not in ("float32", "float16"):
        return
    views, vid, reader = forward_views(f, h_id)
    if reader is None or reader <= i:
        return
    lin = f.placed[reader]
    if lin.name in Q4_INNER:
        _fold_q4(f, i, chain, reader, views, vid)
        return
    parts = linear_parts(f, lin, vid)
    if parts is None:
        return
    w_id, b_id, r_id, outs = parts
    w, x = f._tensor(w_id), f._tensor(vid)
    lead = without_leading_ones(h.shape[:-1])
    if w is None or x is None or len(w.shape) != 2 or w.shape[1] != h.shape[-1] \
            or w.dtype != h.dtype or not x.shape or x.shape[-1] != h.shape[-1] \
            or without_leading_ones(x.shape[:-1]) != lead:
        return  # the input's rows laid out as the chain's (leading 1s aside)
    no_residual = r_id is None or isinstance(f.values[r_id], Null)
    if no_residual and any(without_leading_ones(f.values[o].shape[:-1]) != lead for o in outs):
        return  # (a residual's output was checked against the linear's when it folded)
    items = f._add(ListValue("value_list", (h_id,) + tuple(outs)))
    if r_id is None:
        r_id = f._add(Null())
    _replace(f, i, reader, views, no_residual or f.writer.get(r_id, -1) < i,
             OpCall(GATED_LINEAR, (g_id, u_id, p_id, w_id, b_id, r_id, items), lin.node_id),
             "elementwise + linear")


def _fold_q4(f, i: int, chain: OpCall, reader: int, views: list, vid: int) -> None:
    """The chain into the 4-bit linear reading it (``vid``: the chain's output through
    views that keep its rows: the linear's output is shaped by its input's rows)."""
    g_id, u_id, p_id, h_id = chain.args
    lin = f.placed[reader]
    h, x = f.values[h_id], f._tensor(vid)
    if q4_outputs(f, lin, vid, Q4_INNER) is None or x is None or not x.shape \
            or x.dtype != h.dtype or x.shape[-1] != h.shape[-1] \
            or without_leading_ones(x.shape[:-1]) != without_leading_ones(h.shape[:-1]):
        return
    extra = list(lin.args[5:-1])  # (offsets, residual) as far as the linear has them
    extra += [f._add(Null()) for _ in range(2 - len(extra))]
    o_id, r_id = extra
    items = f._add(ListValue("value_list", (h_id, lin.args[-1])))
    _replace(f, i, reader, views,
             isinstance(f.values[r_id], Null) or f.writer.get(r_id, -1) < i,
             OpCall(GATED_Q4, (g_id, u_id, p_id) + tuple(lin.args[1:5]) + (o_id, r_id, items),
                    lin.node_id), "elementwise + q4 linear")


def _replace(f, i: int, reader: int, views: list, at_chain: bool, op: OpCall, kind: str):
    """The chain (at ``i``), its views and the linear (at ``reader``) become ``op``: at the
    chain's place when ``at_chain`` (the residual is ready there: its inputs then live no
    longer than before), else at the linear's."""
    for j in [i, reader] + views:
        f._unlink(j)
    f._link(i if at_chain else reader, op)
    f._count(kind)
