"""The strong torch anchor for ``bench --llm`` natively: a plain Llama decode step with a
static KV cache, compiled by ``torch.compile(fullgraph=True)`` and replayed as one CUDA
graph (impl ``torch-compile-graph``), beside the same step captured uncompiled
(``torch-cuda-graph``). gpt-fast's recipe: every shape fixed, the cache written in place
at a position held in a tensor, attention over the whole cache with a mask, the greedy
argmax inside the graph, so a step is one replay and one ``.item()``.

Weights are random (timing does not depend on them), in the program's dtype, with the
export's hyper-parameters; q/k/v and gate/up are stacked (one matmul each) as our fused
program has them. HF Llama's math: RMSNorm, rotate-half RoPE, GQA, SwiGLU, tied or untied
head.
"""

from __future__ import annotations

import time


def _model_class():
    import torch
    import torch.nn.functional as F

    class StaticLlama(torch.nn.Module):
        def __init__(self, hp: dict, max_len: int, dtype):
            super().__init__()
            d, f, hd = hp["dim"], hp["hidden_dim"], hp["head_dim"]
            self.nh, self.nkv, self.hd, self.eps = hp["n_heads"], hp["n_kv_heads"], hd, hp["norm_eps"]
            layers, vocab = hp["n_layers"], hp["vocab_size"]
            g = torch.Generator().manual_seed(0)

            def w(*shape):
                return torch.nn.Parameter((torch.randn(*shape, generator=g) * 0.02).to(dtype),
                                          requires_grad=False)

            self.embed = w(vocab, d)
            self.head = self.embed if hp.get("tied_output", True) else w(vocab, d)
            self.norm = torch.nn.Parameter(torch.ones(d, dtype=dtype), requires_grad=False)
            qkv = (self.nh + 2 * self.nkv) * hd
            self.layers = torch.nn.ModuleList()
            for _ in range(layers):
                m = torch.nn.Module()
                m.attn_norm, m.mlp_norm = (torch.nn.Parameter(torch.ones(d, dtype=dtype),
                                                              requires_grad=False) for _ in "ab")
                m.qkv, m.o, m.gate_up, m.down = w(qkv, d), w(d, self.nh * hd), w(2 * f, d), w(d, f)
                self.layers.append(m)
            cache = (layers, 1, self.nkv, max_len, hd)
            self.register_buffer("k_cache", torch.zeros(cache, dtype=dtype))
            self.register_buffer("v_cache", torch.zeros(cache, dtype=dtype))
            inv = hp["rope_freq_base"] ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
            angles = torch.outer(torch.arange(max_len, dtype=torch.float64), inv)
            angles = torch.cat([angles, angles], dim=-1)
            self.register_buffer("cos", angles.cos().to(dtype))
            self.register_buffer("sin", angles.sin().to(dtype))
            self.max_len = max_len

        def _norm(self, x, weight):
            v = x.float()
            v = v * torch.rsqrt(v.pow(2).mean(-1, keepdim=True) + self.eps)
            return v.to(x.dtype) * weight

        def _rope(self, x, cos, sin):
            half = x.shape[-1] // 2
            rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
            return x * cos + rotated * sin

        def forward(self, ids, pos):
            """ids [1, T], pos [T] (the positions, on the GPU): the next token's id [1]."""
            return self.logits(ids, pos).argmax(-1)

        def logits(self, ids, pos):
            """The last position's logits [1, vocab], the cache rows at ``pos`` written."""
            t = ids.shape[1]
            x = F.embedding(ids, self.embed)
            cos, sin = self.cos[pos][None, None], self.sin[pos][None, None]
            visible = torch.arange(self.max_len, device=ids.device)[None, :] <= pos[:, None]
            mask = visible[None, None]
            q_n, kv_n = self.nh * self.hd, self.nkv * self.hd
            for i, m in enumerate(self.layers):
                h = self._norm(x, m.attn_norm) @ m.qkv.t()
                q = h[..., :q_n].view(1, t, self.nh, self.hd).transpose(1, 2)
                k = h[..., q_n:q_n + kv_n].view(1, t, self.nkv, self.hd).transpose(1, 2)
                v = h[..., q_n + kv_n:].view(1, t, self.nkv, self.hd).transpose(1, 2)
                q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
                self.k_cache[i].index_copy_(2, pos, k)
                self.v_cache[i].index_copy_(2, pos, v)
                a = F.scaled_dot_product_attention(q, self.k_cache[i], self.v_cache[i],
                                                   attn_mask=mask, enable_gqa=True)
                x = x + a.transpose(1, 2).reshape(1, t, q_n) @ m.o.t()
                gu = self._norm(x, m.mlp_norm) @ m.gate_up.t()
                gate, up = gu.chunk(2, dim=-1)
                x = x + (F.silu(gate) * up) @ m.down.t()
            return self._norm(x[:, -1], self.norm) @ self.head.t()

    return StaticLlama


def _graph(fn, ids, pos, warmups: int = 3):
    """``fn(ids, pos)`` captured as one CUDA graph over the static inputs (after warm-up
    calls on a side stream, which also trigger the compile); returns (graph, output)."""
    import torch

    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(warmups):
            fn(ids, pos)
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(ids, pos)
    return graph, out


def records(hp: dict, dtype: str, todo: list[dict], progress=print) -> list[dict]:
    """``bench --llm`` decode records of the static-cache step at the plan's contexts and
    positions, compiled + CUDA graph and eager + CUDA graph; [] without CUDA. Each context's
    cache is filled by an eager prefill of its prompt first (not timed: torch-cuda's
    prefill records are the eager anchor)."""
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    from pte_webgpu.llm.bench_job import summarize

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    max_len = max(p["prefill"] + p["steps"] for p in todo)
    model = _model_class()(hp, max_len, getattr(torch, dtype)).cuda().eval()
    ids = torch.zeros((1, 1), dtype=torch.long, device="cuda")
    pos = torch.zeros(1, dtype=torch.long, device="cuda")
    out = []
    forms = (("torch-cuda-graph", model),
             ("torch-compile-graph", torch.compile(model, fullgraph=True, dynamic=False)))
    with torch.inference_mode():
        for impl, fn in forms:
            t0 = time.perf_counter()
            try:
                graph, token = _graph(fn, ids, pos)
            except Exception as e:  # e.g. no compiler for inductor on this host: say so
                progress(f"{impl} {dtype}: failed, {type(e).__name__}: {str(e)[:300]}")
                continue
            progress(f"{impl} {dtype}: captured in {time.perf_counter() - t0:.1f} s")
            for p in todo:
                n = p["prefill"]
                prompt = torch.arange(n, device="cuda")[None] % hp["vocab_size"]
                first = int(model(prompt, torch.arange(n, device="cuda"))[0])
                greedy, times = [first], []
                for step in range(p["steps"]):
                    t0 = time.perf_counter()
                    ids.fill_(greedy[-1])
                    pos.fill_(n + step)
                    graph.replay()
                    greedy.append(int(token[0]))
                    times.append((time.perf_counter() - t0) * 1e3)
                out.append(summarize({
                    "impl": impl, "phase": "decode", "context": p["context"], "ms": times,
                    "greedy": greedy, "positions": [n, n + p["steps"] - 1], "cache": "prefill",
                    "adapter": torch.cuda.get_device_name(), "version": f"torch {torch.__version__}",
                    "static_cache_len": max_len}))
            del graph
    return out
