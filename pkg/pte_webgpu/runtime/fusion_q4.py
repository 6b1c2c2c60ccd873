"""Load-time fusion of 4-bit linears (runtime/fusion.py's step 1 for et_vk.linear_q4gsw):
q4gsw linears reading one input (through views) with constant packed weights and scales,
the same group size, scale dtype and bias presence, become one
``pte_webgpu.fused_linear_q4gsw`` (ops/linear_q4.py). Its packed weight is theirs stacked
along N (rows of whole u32 words: the bytes meet end to end), its scales theirs one after
another (each part keeps its own row stride: the op's layout list says where each
begins), bias stacked like the float linears'."""

from __future__ import annotations

from ..model.graph import ListValue, Null, OpCall, Scalar, TensorValue
from ..ops.fused_linear import MAX_SPLIT
from ..ops.linear_q4 import FUSED, Q4GSW


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
    if op.name != Q4GSW or len(op.args) != 6:
        return None
    x_id, w_id, s_id, g_id, b_id, out_id = op.args
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
            group.value, out.dtype, has_bias)


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
    outs = f._add(ListValue("value_list", tuple(op.args[5] for op in ops)))
    for i in chunk:
        f._unlink(i)
    x_id, _, _, g_id, _, _ = ops[0].args
    f._link(chunk[0], OpCall(FUSED, (x_id, w_id, s_id, g_id, b_id, layout, outs),
                             ops[0].node_id))
    f._count(f"q4 linear x{len(chunk)}")
