"""Gemma 2 / Gemma 3 on top of ExecuTorch's llama example model.

The example model has (1 + w) norms and a GELU enum but no post-attention / post-FFN
norms in its blocks, a SiLU-only feed-forward, no soft-capping and no per-layer RoPE base,
and its fused ``sdpa_with_kv_cache`` cannot cap scores. So the blocks keep the example's
TransformerBlock (pre-norms, residuals, Rope, the quantization and KV transforms find the
same nn.Linear / nn.Embedding modules) and swap in:

- ``GemmaFeedForward``: GeGLU (tanh GELU of the gate times up), then the post-FFN norm;
- ``GemmaAttention``: q/k/v, optional q/k norm, interleaved RoPE (its own tables on
  sliding layers, whose base differs in Gemma 3), the cache written with llama's
  ``update_cache``, attention written out (scores, soft-cap, mask, softmax, values) so
  the Vulkan partitioner lowers plain ops, then the post-attention norm;
- ``GemmaTransformer``: the embedding scaled by sqrt(width), one causal and one sliding
  mask (additive, [context, context]) shared by the layers, each narrowing it at its own
  start, the final logits soft-cap.

GGUF norm weights already hold 1 + w (llama.cpp's converter adds the 1), so every norm
here is the example's plain RMSNorm. Sliding layers keep a full-length cache and mask to
the window: exact, not a ring buffer.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .gguf_arch import sliding_layer


def _rope_tables(head_dim: int, positions: int, base: float, linear: float | None):
    """Interleaved-pair cos/sin [positions, head_dim / 2] in float64, rounded once; a
    linear factor divides the positions (Gemma 3's global layers)."""
    half = head_dim // 2
    inv = base ** (-torch.arange(half, dtype=torch.float64) * 2 / head_dim)
    pos = torch.arange(positions, dtype=torch.float64) / (linear or 1.0)
    angles = torch.outer(pos, inv)
    return torch.cos(angles).float(), torch.sin(angles).float()


def _mask(context: int, window: int | None) -> torch.Tensor:
    """Additive mask [query position, key position]: 0 where a query sees the key (causal,
    and within ``window`` tokens counting itself when given), -inf elsewhere."""
    q = torch.arange(context).unsqueeze(1)
    k = torch.arange(context).unsqueeze(0)
    seen = k <= q
    if window:
        seen = seen & (q - k < window)
    return torch.zeros(context, context).masked_fill(~seen, float("-inf"))


class GemmaFeedForward(nn.Module):
    def __init__(self, dim: int, hidden: int, eps: float):
        from executorch.examples.models.llama.norm import RMSNorm

        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)  # gate
        self.w2 = nn.Linear(hidden, dim, bias=False)  # down
        self.w3 = nn.Linear(dim, hidden, bias=False)  # up
        self.post_norm = RMSNorm(dim, eps=eps)

    def forward(self, x):
        gate = nn.functional.gelu(self.w1(x), approximate="tanh")
        return self.post_norm(self.w2(gate * self.w3(x)))


class GemmaAttention(nn.Module):
    def __init__(self, hp, layer: int, rope, max_context_len: int):
        from executorch.examples.models.llama.norm import RMSNorm

        super().__init__()
        self.n_heads, self.n_kv, self.head_dim = hp.n_heads, hp.n_kv_heads, hp.head_dim
        self.max_context_len = max_context_len
        self.sliding = sliding_layer(hp, layer)
        self.scale = hp.attn_scale
        self.softcap = hp.attn_softcap
        q, kv = hp.n_heads * hp.head_dim, hp.n_kv_heads * hp.head_dim
        self.wq = nn.Linear(hp.dim, q, bias=False)
        self.wk = nn.Linear(hp.dim, kv, bias=False)
        self.wv = nn.Linear(hp.dim, kv, bias=False)
        self.wo = nn.Linear(q, hp.dim, bias=False)
        if hp.qk_norm:
            self.q_norm_fn = RMSNorm(hp.head_dim, eps=hp.norm_eps)
            self.k_norm_fn = RMSNorm(hp.head_dim, eps=hp.norm_eps)
        self.post_norm = RMSNorm(hp.dim, eps=hp.norm_eps)
        self.rope = rope
        self.own_rope = self.sliding and hp.rope_local_base is not None
        if self.own_rope:
            cos, sin = _rope_tables(hp.head_dim, max_context_len, hp.rope_local_base, None)
            self.register_buffer("freqs_cos", cos, persistent=False)
            self.register_buffer("freqs_sin", sin, persistent=False)
        # llama.update_cache's layout: [batch, position, head, head size]
        shape = (1, max_context_len, hp.n_kv_heads, hp.head_dim)
        self.register_buffer("k_cache", torch.zeros(shape))
        self.register_buffer("v_cache", torch.zeros(shape))

    def _per_head(self, cache):
        """[1, ctx, n_kv, D] -> [heads, ctx, D]: query head h reads KV head h // rep (a cat
        of slices: the Vulkan partitioner lowers expand_copy only without dynamic shapes)."""
        rep = self.n_heads // self.n_kv
        per = cache.squeeze(0)
        if rep > 1:
            per = torch.cat([per[:, g:g + 1] for g in range(self.n_kv) for _ in range(rep)], dim=1)
        return per.permute(1, 0, 2)

    def forward(self, x, freqs_cos, freqs_sin, input_pos=None, gemma_masks=None, **_):
        _, seq, _ = x.shape
        start = input_pos[-1].item()
        torch._check_is_size(start)
        torch._check(start < self.max_context_len)
        q = self.wq(x).view(1, seq, self.n_heads, self.head_dim)
        k = self.wk(x).view(1, seq, self.n_kv, self.head_dim)
        v = self.wv(x).view(1, seq, self.n_kv, self.head_dim)
        if hasattr(self, "q_norm_fn"):
            q, k = self.q_norm_fn(q), self.k_norm_fn(k)
        if self.own_rope:
            freqs_cos = self.freqs_cos.narrow(0, start, seq)
            freqs_sin = self.freqs_sin.narrow(0, start, seq)
        q, k = self.rope.forward(q, k, freqs_cos, freqs_sin)
        torch.ops.llama.update_cache(k, self.k_cache, start)
        torch.ops.llama.update_cache(v, self.v_cache, start)
        # one batch per query head (bmm), the KV heads repeated to them: views of dynamic
        # shapes keep the sequence outermost, and the caches' side has static shapes
        qh = q.squeeze(0).permute(1, 0, 2)  # [heads, seq, D]
        scores = torch.bmm(qh, self._per_head(self.k_cache).permute(0, 2, 1)) * self.scale
        if self.softcap:
            scores = torch.tanh(scores / self.softcap) * self.softcap
        mask = (gemma_masks[1] if self.sliding else gemma_masks[0]).narrow(0, start, seq)  # [seq, ctx]
        weights = torch.softmax(scores + mask, dim=-1)
        out = torch.bmm(weights, self._per_head(self.v_cache))  # [heads, seq, D]
        out = out.permute(1, 0, 2).reshape(1, seq, self.n_heads * self.head_dim)
        return self.post_norm(self.wo(out)), None


def _transformer_class():
    from executorch.examples.models.llama.llama_transformer import Transformer

    class GemmaTransformer(Transformer):
        def __init__(self, params, layers, rope, hp):
            super().__init__(params, layers, rope)
            self.embedding_scale = math.sqrt(hp.dim)
            self.final_softcap = hp.final_softcap
            ctx = params.max_context_len
            self.register_buffer("causal_mask", _mask(ctx, None), persistent=False)
            if hp.sliding_window:
                self.register_buffer("sliding_mask", _mask(ctx, hp.sliding_window), persistent=False)

        def forward(self, tokens=None, attn_options=None, h=None):
            # the whole masks: each attention narrows them at its own start (a start read
            # here once for all layers lost its size bounds when ExecuTorch's passes retrace)
            causal = self.causal_mask
            sliding = self.sliding_mask if hasattr(self, "sliding_mask") else causal
            options = {**attn_options, "gemma_masks": (causal, sliding)}
            h = self.tok_embeddings(tokens) * self.embedding_scale
            logits = super().forward(None, options, h)
            if self.final_softcap:
                logits = torch.tanh(logits / self.final_softcap) * self.final_softcap
            return logits

    return GemmaTransformer


def construct(hp, args):
    """The eager Gemma model of hyperparameters ``hp`` (LlamaHParams) on ModelArgs ``args``."""
    from executorch.examples.models.llama.llama_transformer import TransformerBlock
    from executorch.examples.models.llama.rope import Rope

    rope = Rope(args)
    if hp.rope_linear_factor:  # Gemma 3 >= 4B: global layers see positions / factor
        cos, sin = _rope_tables(hp.head_dim, args.max_context_len, hp.rope_freq_base,
                                hp.rope_linear_factor)
        rope.freqs_cos.copy_(cos)
        rope.freqs_sin.copy_(sin)
    layers = nn.ModuleList()
    for i in range(hp.n_layers):
        block = TransformerBlock(args, GemmaAttention(hp, i, rope, args.max_context_len), layer_id=i)
        block.feed_forward = GemmaFeedForward(hp.dim, hp.hidden_dim, hp.norm_eps)
        layers.append(block)
    return _transformer_class()(args, layers, rope, hp)
