"""RoPE folded into the attention that reads it: an ``et_vk.apply_rotary_emb`` (the llama
example's interleaved pairs) or ``et_vk.apply_rotary_emb_hf`` (its HF form) whose two
outputs only one ``sdpa_with_kv_cache`` reads, as its q and k, becomes one
``pte_webgpu.sdpa_rope`` / ``pte_webgpu.sdpa_rope_hf`` (ops/attention.py) at the
attention's place: its kernels turn q and k as they read them, so a decode step loses a dispatch a
layer (in Chromium a step's time follows its dispatch count: docs/performance.md).

The llama export slices its interleaved tables at input_pos once a step (two
``slice_copy`` dispatches) and every layer's rope reads the slices; where both tables
are such slices (dim 0, step 1, one start) of constant tables, the fold reads rows
start + s of the whole tables instead (``pte_webgpu.sdpa_rope_rows``), and the slices,
left without readers, are dropped."""

from __future__ import annotations

from ..model.graph import OpCall, Scalar
from ..ops.attention import SDPA_ROPE, SDPA_ROPE_HF, SDPA_ROPE_ROWS
from .views import placed_ops

ROPE = "et_vk.apply_rotary_emb.default"
ROPE_HF = "et_vk.apply_rotary_emb_hf.default"
FOLDED = {ROPE: SDPA_ROPE, ROPE_HF: SDPA_ROPE_HF}
SDPA = "sdpa_with_kv_cache.default"
SLICE = "aten.slice_copy.Tensor"
PREPACK = "et_vk.prepack.default"
ENABLED = True  # tests turn this fold alone off, to compare its outputs with the rope op's


def fold_ropes(f) -> None:
    """``f``: a fusion._Fusion."""
    if not ENABLED:
        return
    for i, rope in placed_ops(f, {ROPE: 5, ROPE_HF: 6}):
        _fold(f, i, rope)
    for i, op in list(f.placed.items()):  # the tables' slices no rope reads any more
        if op.name == SLICE and op.args[-1] not in f.keep and not f.readers.get(op.args[-1]):
            f._unlink(i)
            f._count("rope table slice read whole")


def _fold(f, i: int, rope: OpCall) -> None:
    xq, xk, cos, sin, *extra, outs = rope.args  # extra: the HF form's start
    turned = tuple(getattr(f.values[outs], "items", ()))
    if len(turned) != 2:
        return
    reader = f._sole_reader(turned[0])
    if reader is None or reader <= i or f._sole_reader(turned[1]) != reader:
        return
    sdpa = f.placed[reader]
    if sdpa.name != SDPA or len(sdpa.args) != 12 or tuple(sdpa.args[:2]) != turned \
            or set(turned) & set(sdpa.args[2:]):
        return
    tensors = [f._tensor(v) for v in (xq, xk, cos, sin, *turned)]
    if any(t is None for t in tensors):
        return
    tq, tk, tc, ts, oq, ok = tensors
    if len(tq.shape) != 4 or tuple(tq.shape) != tuple(oq.shape) \
            or tuple(tk.shape) != tuple(ok.shape) or len({t.dtype for t in tensors}) != 1:
        return  # (the rope op's own checks and errors, where it stays)
    name, tables = FOLDED[rope.name], (cos, sin)
    whole = _whole_tables(f, cos, sin) if rope.name == ROPE else None
    if whole is not None:
        name, tables, extra = SDPA_ROPE_ROWS, whole[:2], [whole[2]]
    # at the attention's place: the rope's inputs are ready there (_repair: lifetimes)
    for j in (i, reader):
        f._unlink(j)
    f._link(reader, OpCall(name, (xq, xk) + tuple(sdpa.args[2:11]) + tables + tuple(extra)
                           + (sdpa.args[11],), sdpa.node_id))
    f._count("rope + sdpa")


def _whole_tables(f, cos: int, sin: int):
    """(cos table, sin table, start) where cos and sin are rows [start, ...) of constant
    tables [T, D/2] sliced along dim 0 with step 1 at one start; else None."""
    found = []
    for vid in (cos, sin):
        op = f.placed.get(f.writer.get(vid, -1))
        if op is None or op.name != SLICE or len(op.args) != 6:
            return None
        table, dim, start, _end, step, out = op.args
        t, o = f._tensor(table), f._tensor(out)
        if t is None or o is None or not _constant(f, table) or len(t.shape) != 2 \
                or len(o.shape) != 2 or o.shape[1] != t.shape[1] or t.dtype != o.dtype \
                or not _is_int(f, dim, 0) or not _is_int(f, step, 1):
            return None
        found.append((table, start, tuple(t.shape)))
    (cos_t, start, shape), (sin_t, sin_start, sin_shape) = found
    a, b = f.values[start], f.values[sin_start]
    same = start == sin_start or (isinstance(a, Scalar) and a == b and a.kind == "int")
    if not same or shape != sin_shape:
        return None
    return cos_t, sin_t, start


def _constant(f, vid: int) -> bool:
    """A constant, or what an et_vk.prepack copies a constant into (an alias: ops/view.py):
    values no op rewrites between the slice and the attention."""
    t = f._tensor(vid)
    op = f.placed.get(f.writer.get(vid, -1))
    if op is not None and op.name == PREPACK and len(op.args) == 2:
        t = f._tensor(op.args[0])
    return t is not None and t.is_constant


def _is_int(f, vid: int, value: int) -> bool:
    v = f.values[vid]
    return isinstance(v, Scalar) and v.kind == "int" and v.value == value
