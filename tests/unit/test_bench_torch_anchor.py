"""bench/llm_torch_static.py's static-cache Llama (the torch.compile + CUDA graph anchor
of `bench --llm`) computes transformers' LlamaForCausalLM: prefill and decode logits of a
tiny model in float64 with the same weights, on the CPU, in the export environment (torch
and transformers; skips without it: `make llm-export-deps`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON = Path(os.environ.get("EXPORT_PYTHON", ROOT / ".venv-export/bin/python"))

SCRIPT = r'''
import sys, torch
sys.path.insert(0, "bench")
import llm_torch_static
from transformers import LlamaConfig, LlamaForCausalLM
for tied, kv in ((True, 2), (False, 4)):
    hp = dict(dim=64, hidden_dim=96, n_layers=2, n_heads=4, n_kv_heads=kv, head_dim=16,
              vocab_size=100, norm_eps=1e-5, rope_freq_base=10000.0, tied_output=tied)
    ours = llm_torch_static._model_class()(hp, 40, torch.float64)
    cfg = LlamaConfig(vocab_size=100, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=kv, head_dim=16,
                      rope_theta=10000.0, rms_norm_eps=1e-5, tie_word_embeddings=tied,
                      max_position_embeddings=64)
    hf = LlamaForCausalLM(cfg).double().eval()
    q, k = 64, kv * 16
    with torch.no_grad():
        for p in ours.parameters():
            p.normal_(0, 0.3)
        hf.model.embed_tokens.weight.copy_(ours.embed)
        hf.lm_head.weight.copy_(ours.head)
        hf.model.norm.weight.copy_(ours.norm)
        for theirs, mine in zip(hf.model.layers, ours.layers):
            a, m = theirs.self_attn, theirs.mlp
            a.q_proj.weight.copy_(mine.qkv[:q])
            a.k_proj.weight.copy_(mine.qkv[q:q + k])
            a.v_proj.weight.copy_(mine.qkv[q + k:])
            a.o_proj.weight.copy_(mine.o)
            m.gate_proj.weight.copy_(mine.gate_up[:96])
            m.up_proj.weight.copy_(mine.gate_up[96:])
            m.down_proj.weight.copy_(mine.down)
            theirs.input_layernorm.weight.copy_(mine.attn_norm)
            theirs.post_attention_layernorm.weight.copy_(mine.mlp_norm)
        ids = torch.randint(0, 100, (1, 12), generator=torch.Generator().manual_seed(1))
        ref = hf(ids).logits[0]
        worst = (ours.logits(ids[:, :8], torch.arange(8))[0] - ref[7]).abs().max()
        for t in range(8, 12):
            got = ours.logits(ids[:, t:t + 1], torch.tensor([t]))[0]
            worst = max(worst, (got - ref[t]).abs().max())
        print(tied, kv, float(worst / ref.abs().max()))
'''


def test_static_llama_equals_transformers():
    if not PYTHON.is_file():
        pytest.skip(f"no export environment at {PYTHON}: run `make llm-export-deps`")
    run = subprocess.run([str(PYTHON), "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True,
                         timeout=600, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert run.returncode == 0, run.stderr[-2000:]
    lines = [ln.split() for ln in run.stdout.splitlines()]
    assert len(lines) == 2
    for tied, kv, rel in lines:
        assert float(rel) < 1e-6, f"tied={tied} kv_heads={kv}: relative error {rel}"
