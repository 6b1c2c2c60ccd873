"""RoPE folded into the attention that reads it: an ``et_vk.apply_rotary_emb`` (the llama
example's interleaved pairs) or ``et_vk.apply_rotary_emb_hf`` (its HF form) whose two
outputs only one ``sdpa_with_kv_cache`` reads, as its q and k, becomes one
``pte_webgpu.sdpa_rope`` / ``pte_webgpu.sdpa_rope_hf`` (ops/attention.py) at the
attention's place: its kernels turn q and k as they read them, so a decode step loses a dispatch a
layer (in Chromium a step's time follows its dispatch count: docs/performance.md)."""

from __future__ import annotations

from ..model.graph import OpCall
from ..ops.attention import SDPA_ROPE, SDPA_ROPE_HF
from .views import placed_ops

ROPE = "et_vk.apply_rotary_emb.default"
ROPE_HF = "et_vk.apply_rotary_emb_hf.default"
FOLDED = {ROPE: SDPA_ROPE, ROPE_HF: SDPA_ROPE_HF}
SDPA = "sdpa_with_kv_cache.default"
ENABLED = True  # tests turn this fold alone off, to compare its outputs with the rope op's


def fold_ropes(f) -> None:
    """``f``: a fusion._Fusion."""
    if not ENABLED:
        return
    for i, rope in placed_ops(f, {ROPE: 5, ROPE_HF: 6}):
        _fold(f, i, rope)


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
    # at the attention's place: the rope's inputs are ready there (_repair: lifetimes)
    for j in (i, reader):
        f._unlink(j)
    f._link(reader, OpCall(FOLDED[rope.name], (xq, xk) + tuple(sdpa.args[2:11]) + (cos, sin)
                           + tuple(extra) + (sdpa.args[11],), sdpa.node_id))
    f._count("rope + sdpa")
