"""What differs between the GGUF architectures the exporter converts.

Each family maps onto options of ExecuTorch's llama example model. Facts behind the table:
- ``llama``: llama.cpp's converter permutes HF's q/k rows into the interleaved-pair RoPE
  layout (transformers' GGUF loader un-permutes them for ``llama`` only), which is what the
  example's ``apply_rotary_emb`` expects. Llama 3.1+ scaling comes as the tensor
  ``rope_freqs.weight`` (one divisor per frequency), not as ``rope.scaling.*`` keys.
- ``qwen2`` and ``qwen3``: llama.cpp runs them with NEOX (rotate-half) RoPE and stores q/k
  rows in HF's order (transformers loads them unchanged), so the exporter reorders them to
  the interleaved layout; qwen2 has q/k/v biases, qwen3 an RMSNorm over each q/k head
  (before RoPE, weights ``attn_q_norm``/``attn_k_norm``).
- ``gemma2`` and ``gemma3`` (export/gemma_model.py): NEOX RoPE with HF-order rows like
  Qwen; GeGLU, the embedding times sqrt(width), a norm after attention and after the FFN
  (``post_attention_norm``, ``post_ffw_norm``); norm weights stored as 1 + w by llama.cpp's
  converter. Sliding-window layers: every other one from the first (Gemma 2), five of
  every six (Gemma 3, whose sliding layers also take RoPE base 10000). Gemma 2 soft-caps
  scores and logits; Gemma 3 has q/k norms instead.
- ``phi3``: llama.cpp's converter writes HF's fused ``qkv_proj`` as ``blk.N.attn_qkv`` (q, k,
  v rows) and ``gate_up_proj`` as ``blk.N.ffn_up`` (gate rows, then up rows: llama.cpp's
  SwiGLU and transformers' ``Phi3MLP`` gate the first half), unpermuted (NEOX RoPE, q/k rows
  in HF's order, as for qwen2); the exporter splits them (gguf_llama.split_fused). Phi-3
  128k / Phi-3.5 carry LongRoPE: tensors ``rope_factors_{short,long}.weight`` (one divisor
  per frequency) and ``rope.scaling.attn_factor`` (cos/sin scale), see ``longrope``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import UnsupportedError


@dataclass(frozen=True)
class Family:
    qkv_bias: bool = False      # blk.N.attn_{q,k,v}.bias
    qk_norm: bool = False       # blk.N.attn_{q,k}_norm.weight, RMSNorm per head before RoPE
    rope_halves: bool = False   # q/k rows in rotate-half order: reorder to interleaved pairs
    gemma: bool = False         # export/gemma_model.py's blocks (GeGLU, post norms, scaled embedding)
    sliding_pattern: int = 0    # every Nth layer attends globally, the others to a window
    fused: bool = False         # blk.N.attn_qkv (q, k, v) and blk.N.ffn_up (gate, up): split
    longrope: bool = False      # LongRoPE factor tensors and attention.sliding_window may come


FAMILIES = {
    "llama": Family(),
    "qwen2": Family(qkv_bias=True, rope_halves=True),
    "qwen3": Family(qk_norm=True, rope_halves=True),
    "gemma2": Family(rope_halves=True, gemma=True, sliding_pattern=2),
    "gemma3": Family(qk_norm=True, rope_halves=True, gemma=True, sliding_pattern=6),
    "phi3": Family(rope_halves=True, fused=True, longrope=True),
}

# Llama-like GGUF architectures not converted yet (Gemma 1), named so that the error says so
NOT_YET = ("gemma",)


def family(arch) -> Family:
    if arch in FAMILIES:
        return FAMILIES[arch]
    if arch in NOT_YET:
        raise UnsupportedError(
            f"GGUF architecture {arch!r} is not converted yet (general.architecture; "
            f"supported: {', '.join(FAMILIES)})")
    raise UnsupportedError(
        f"GGUF architecture {arch!r} is not a Llama-family model this exporter converts "
        f"(general.architecture; supported: {', '.join(FAMILIES)})")


def interleave_rows(w, n_heads: int):
    """q/k rows (or a per-head vector) reordered per head from HF's rotate-half order
    (pairs i, i + D/2) to interleaved pairs (2i, 2i + 1). Works on numpy arrays of shape
    [n_heads * D, ...] or [D] (a q/k norm weight: n_heads 1)."""
    head_dim = w.shape[0] // n_heads
    half = head_dim // 2
    order = [h * head_dim + j for h in range(n_heads) for i in range(half) for j in (i, i + half)]
    return w[order]


def longrope(hp, context: int):
    """(frequency divisors or None, cos/sin scale) of a LongRoPE model for a program of
    ``context`` positions. As llama.cpp picks them by its context size (transformers by the
    sequence so far; the same while that stays within the original context): the short
    factors unless the context exceeds ``rope.scaling.original_context_length``. The
    attention factor (transformers' ``attention_factor``) scales cos and sin either way."""
    if hp.rope_factors_short is None:
        return None, hp.rope_attn_factor
    long = context > hp.rope_original_context
    return (hp.rope_factors_long if long else hp.rope_factors_short), hp.rope_attn_factor


def check_sliding_window(hp, context: int) -> None:
    """Phi-3's ``attention.sliding_window`` W (0: none) lets a query see its last W positions
    (transformers' mask; llama.cpp ignores it for phi3). A program of at most W positions
    never reaches past it, so it has no effect there; a longer one would need the windowed
    mask. (Gemma's sliding layers are masked to their window: gemma_model.py.)"""
    if hp.sliding_window and context > hp.sliding_window and not hp.gemma:  # Gemma: masked
        raise UnsupportedError(
            f"context {context} exceeds the sliding attention window of {hp.sliding_window} "
            f"({hp.architecture}.attention.sliding_window); convert with --max-context-len "
            f"<= {hp.sliding_window} (a windowed mask is not implemented)")


def sliding_layer(hp, layer: int) -> bool:
    """Whether Gemma layer ``layer`` attends to a window: all but every ``sliding_pattern``-th
    (Gemma 2: pattern 2, layers 0, 2, ...; Gemma 3: 6, layers 5, 11, ... are global)."""
    return bool(hp.sliding_window) and (layer + 1) % hp.sliding_pattern != 0
