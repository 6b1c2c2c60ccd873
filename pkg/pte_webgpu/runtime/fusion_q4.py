"""Load-time fusion of 4-bit linears (runtime/fusion.py's step 1 for et_vk.linear_q4gsw):

1. ``q4gsw(x) + linear(group sums of x, offsets)``, the form export/exact_q4.py gives a
   GGUF's Q4_1 linears (view of x as [..., K / group, group], sum over the last dim, a
   float linear of constant offsets [N, K / group], an add), becomes one
   ``pte_webgpu.linear_q4gsw_offsets``: 4 dispatches fewer per linear.
2. q4gsw linears (with or without offsets, all alike) reading one input (through views)
   with constant packed weights and scales, the same group size, scale dtype and bias
   presence, become one ``pte_webgpu.fused_linear_q4gsw`` (ops/linear_q4.py). Its packed
   weight is theirs stacked along N (rows of whole u32 words: the bytes meet end to end),
   its scales theirs one after another (each part keeps its own row stride: the op's
   layout list says where each begins), bias stacked like the float linears', offsets
   listed per part.
3. A q4gsw linear (with or without offsets) whose output only feeds ``add.Tensor(residual,
   it)`` with alpha 1 becomes ``pte_webgpu.linear_q4gsw_residual``, the add in its
   epilogue (as the float linears' residual form, fusion.py step 2).
"""

from __future__ import annotations

from ..model.graph import ListValue, Null, OpCall, Scalar, TensorValue
from ..ops.fused_linear import MAX_SPLIT
from ..ops.linear_q4 import ARG_COUNTS, FUSED, OFFSETS, Q4GSW
from ..ops.linear_q4_residual import RESIDUAL
from .views import placed_ops, add_through_views, back_views, residual_add

SUM, LINEAR = "aten.sum.dim_IntList", "aten.linear.default"


def fold_offsets(f) -> None:
    """Fold on ``f`` (fusion._Fusion) every q4gsw + group-sum offset linear pair."""
    for i, _ in placed_ops(f, {Q4GSW: 6}):
        _fold_offsets(f, i)


def _fold_offsets(f, i: int) -> None:
    x_id, w_id, s_id, g_id, b_id, out_id = f.placed[i].args
    group = f.values[g_id]
    found = add_through_views(f, out_id)
    if found is None or not (isinstance(group, Scalar) and group.kind == "int"):
        return
    out_views, _, add_i, other = found
    add = f.placed[add_i]
    total = add.args[3]
    if f._sole_reader(other) != add_i:
        return
    term_views, term = back_views(f, other)
    lin_i = f.writer.get(term)
    if lin_i is None or f.placed[lin_i].name != LINEAR or len(f.placed[lin_i].args) != 4:
        return
    sums_in, o_id, lin_b, _ = f.placed[lin_i].args
    o, out, t = _constant(f, o_id), f._tensor(out_id), f._tensor(total)
    if o is None or not isinstance(f.values[lin_b], Null) or len(o.shape) != 2 \
            or out is None or t is None or tuple(t.shape) != tuple(out.shape) \
            or t.dtype != out.dtype or f._sole_reader(term) is None:
        return
    sum_views, sums = back_views(f, sums_in)
    sum_i = f.writer.get(sums)
    if sum_i is None or f.placed[sum_i].name != SUM or len(f.placed[sum_i].args) != 5 \
            or f._sole_reader(sums) is None:
        return
    grouped, dims, keep, dtype, _ = f.placed[sum_i].args
    g_in = f._tensor(grouped)
    x = f._tensor(x_id)
    if g_in is None or x is None or f._root(grouped) != f._root(x_id) or len(g_in.shape) < 2 \
            or tuple(g_in.shape[-2:]) != (x.shape[-1] // group.value, group.value) \
            or tuple(o.shape) != (out.shape[-1], x.shape[-1] // group.value) \
            or not isinstance(f.values[dtype], Null) or getattr(f.values[keep], "value", True) \
            or [d % len(g_in.shape) for d in getattr(f.values[dims], "items", ())] \
            != [len(g_in.shape) - 1]:
        return
    grouping_views, _ = back_views(f, grouped)  # x as [..., K / group, group]
    for j in [i, add_i, lin_i, sum_i] + out_views + term_views + sum_views + grouping_views:
        f._unlink(j)
    f._link(add_i, OpCall(OFFSETS, (x_id, w_id, s_id, g_id, b_id, o_id, total),
                          add.node_id))
    f._count("q4 linear + group offsets")


def group_q4(f, nbytes, max_binding: int) -> None:
    """Fuse on ``f`` (fusion._Fusion) every group of q4gsw linears sharing an input."""
    groups: dict[tuple, list[int]] = {}
    for i in sorted(f.placed):
        key = _key(f, i)
        if key is not None:
            groups.setdefault(key, []).append(i)
    for members in groups.values():
        for start in range(0, len(members) - 1, MAX_SPLIT):
            chunk = members[start:start + MAX_SPLIT]
            if len(chunk) > 1:
                _group(f, chunk, nbytes, max_binding)


def _constant(f, vid: int) -> TensorValue | None:
    t = f._tensor(vid)
    return t if t is not None and t.is_constant and t.mem_obj_id < 0 else None


def _key(f, i: int):
    op = f.placed[i]
    if op.name not in (Q4GSW, OFFSETS) or len(op.args) != ARG_COUNTS[op.name]:
        return None
    x_id, w_id, s_id, g_id, b_id, out_id = op.args[:5] + op.args[-1:]
    if op.name == OFFSETS and _constant(f, op.args[5]) is None:
        return None
    x, out, w, s = f._tensor(x_id), f._tensor(out_id), _constant(f, w_id), _constant(f, s_id)
    group = f.values[g_id]
    if x is None or out is None or w is None or s is None or len(w.shape) != 2 \
            or len(s.shape) != 2 or not x.shape or not out.shape \
            or not (isinstance(group, Scalar) and group.kind == "int"):
        return None
    has_bias = not isinstance(f.values[b_id], Null)
    if has_bias:
        b = _constant(f, b_id)
        # bias padded past N (ExecuTorch aligns it to 4) would not stack end to end
        if b is None or b.dtype != out.dtype or len(b.shape) != 1 or b.numel != w.shape[0]:
            return None
    root = f._tensor(f._root(x_id))
    if root is None or root.is_constant:
        return None
    return (f._root(x_id), tuple(x.shape), w.dtype, w.shape[1], s.dtype, s.shape[0],
            group.value, out.dtype, has_bias, op.name)


def _group(f, chunk: list[int], nbytes, max_binding: int) -> None:
    ops = [f.placed[i] for i in chunk]
    w0, s0 = f.values[ops[0].args[1]], f.values[ops[0].args[2]]
    weights, scales = [op.args[1] for op in ops], [op.args[2] for op in ops]
    stacked_w = TensorValue(w0.dtype, (sum(f.values[w].shape[0] for w in weights),
                                       w0.shape[1]))
    stacked_s = TensorValue(s0.dtype, (sum(f.values[s].numel for s in scales),))
    has_bias = not isinstance(f.values[ops[0].args[4]], Null)
    biases = [op.args[4] for op in ops]
    stacked_b = TensorValue(f.values[biases[0]].dtype, (stacked_w.shape[0],)) \
        if has_bias else None
    # parts meet at their byte offsets only when none is padded to 4 bytes
    for whole, parts in ((stacked_w, weights), (stacked_s, scales), (stacked_b, biases)):
        if whole is not None and (nbytes(whole) > max_binding or nbytes(whole) != sum(
                nbytes(f.values[p]) for p in parts)):
            return
    w_id = f._add(stacked_w)
    f.concat[w_id] = tuple(weights)
    s_id = f._add(stacked_s)
    f.concat[s_id] = tuple(scales)
    b_id = ops[0].args[4]
    if has_bias:
        b_id = f._add(stacked_b)
        f.concat[b_id] = tuple(biases)
    strides = [f.values[s].shape[1] for s in scales]
    offsets, at = [], 0
    for s in scales:
        offsets.append(at)
        at += f.values[s].numel
    layout = f._add(ListValue("int_list", tuple(strides + offsets)))
    outs = f._add(ListValue("value_list", tuple(op.args[-1] for op in ops)))
    offsets = f._add(ListValue("value_list", tuple(op.args[5] for op in ops))) \
        if ops[0].name == OFFSETS else f._add(Null())
    for i in chunk:
        f._unlink(i)
    x_id, g_id = ops[0].args[0], ops[0].args[3]
    f._link(chunk[0], OpCall(FUSED, (x_id, w_id, s_id, g_id, b_id, layout, offsets, outs),
                             ops[0].node_id))
    f._count(f"q4 linear x{len(chunk)}")


def fold_residuals(f) -> None:
    """Fold on ``f`` (fusion._Fusion) each residual add after a lone q4gsw linear."""
    for i, _ in placed_ops(f, {name: ARG_COUNTS[name] for name in (Q4GSW, OFFSETS)}):
        _fold_residual(f, i)


def _fold_residual(f, i: int) -> None:
    op = f.placed[i]
    found = residual_add(f, op.args[-1])
    if found is None:
        return
    views, reader, r_id, total = found
    add, t, out = f.placed[reader], f._tensor(total), f._tensor(op.args[-1])
    # the same shape throughout (the kernel writes the linear's rows as the add's)
    if out is None or tuple(out.shape) != tuple(t.shape) or out.dtype != t.dtype:
        return
    offsets = op.args[5] if op.name == OFFSETS else f._add(Null())
    # At the add's place: the residual is ready there; the linear's input lives until then.
    for j in [i, reader] + views:
        f._unlink(j)
    f._link(reader, OpCall(RESIDUAL, tuple(op.args[:5]) + (offsets, r_id, total),
                           add.node_id))
    f._count("q4 linear + residual")
