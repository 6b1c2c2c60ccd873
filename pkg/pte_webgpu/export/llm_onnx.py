"""A Llama-family GGUF -> ONNX with its KV cache, for ONNX Runtime Web and transformers.js
(``pte-webgpu bench --llm``'s browser references; ``make llm-onnx``). Host only.

    python -m pte_webgpu.export.llm_onnx MODEL.gguf --out-dir build/llm/onnx/NAME

The weights are the ones ``make llm`` puts in the .pte (``gguf_llama.state_dict``, fp32),
q/k rows reordered to HF's rotate-half layout (what ONNX llama exports use). The graph is a
plain torch Llama (RMSNorm, rotate-half RoPE, grouped-query attention, SwiGLU, tied head)
traced by ``torch.onnx.export`` in the layout transformers.js runs a text-generation-with-past
model with: inputs ``input_ids``, ``attention_mask`` [1, past + n], ``position_ids``,
``past_key_values.{i}.key|value`` [1, kv_heads, past, head_dim]; outputs ``logits`` and
``present.{i}.key|value``. Like the .pte (and unlike a full-logits export) ``logits`` holds the
last position only, [1, 1, vocab], so a long prefill does not write n x vocab floats.

Files: ``onnx/model.onnx``, ``config.json``, ``generation_config.json``, ``export.json``
(checks: greedy tokens and logits of ONNX Runtime (CPU) against the torch module, when
onnxruntime is installed; the torch module against make llm's reference.json, when there).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

from . import gguf_llama


def build_module(hp, weights: dict):
    """The torch decoder over ``weights`` (llama example keys, interleaved q/k rows)."""
    import torch
    from torch import nn

    from .llm_reference import rotate_half_rows

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            w = dict(weights)
            for i in range(hp.n_layers):
                for name, heads in (("wq", hp.n_heads), ("wk", hp.n_kv_heads)):
                    key = f"layers.{i}.attention.{name}.weight"
                    w[key] = rotate_half_rows(w[key], heads)
            self.w = nn.ParameterDict({k.replace(".", "_"): nn.Parameter(v, requires_grad=False)
                                       for k, v in w.items() if k != "output.weight"})
            self.tied = hp.tied_output
            if not self.tied:
                self.w["output_weight"] = nn.Parameter(w["output.weight"], requires_grad=False)
            inv = 1.0 / hp.rope_freq_base ** (torch.arange(0, hp.head_dim, 2).float() / hp.head_dim)
            self.register_buffer("inv_freq", inv, persistent=False)

        def p(self, key):
            return self.w[key.replace(".", "_")]

        def rms(self, x, key):
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + hp.norm_eps)
            return x * self.p(key)

        def forward(self, input_ids, attention_mask, position_ids, *past):
            n = input_ids.shape[1]
            x = self.p("tok_embeddings.weight")[input_ids]
            freqs = position_ids.float()[..., None] * self.inv_freq      # [1, n, hd/2]
            angles = torch.cat([freqs, freqs], dim=-1)[:, None]           # [1, 1, n, hd]
            cos, sin = angles.cos(), angles.sin()
            total = attention_mask.shape[1]
            q_pos = torch.arange(n, device=x.device)[:, None] + (total - n)
            allowed = torch.arange(total, device=x.device)[None, :] <= q_pos  # causal
            allowed = allowed[None, None] & attention_mask[:, None, None, :].bool()
            presents = []
            group = hp.n_heads // hp.n_kv_heads
            for i in range(hp.n_layers):
                L = f"layers.{i}."
                h = self.rms(x, L + "attention_norm.weight")
                q = (h @ self.p(L + "attention.wq.weight").T).view(1, n, hp.n_heads, hp.head_dim)
                k = (h @ self.p(L + "attention.wk.weight").T).view(1, n, hp.n_kv_heads, hp.head_dim)
                v = (h @ self.p(L + "attention.wv.weight").T).view(1, n, hp.n_kv_heads, hp.head_dim)
                q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
                q = q * cos + _rotate_half(q) * sin
                k = k * cos + _rotate_half(k) * sin
                k = torch.cat([past[2 * i], k], dim=2)
                v = torch.cat([past[2 * i + 1], v], dim=2)
                presents += [k, v]
                kk = k.repeat_interleave(group, dim=1)
                vv = v.repeat_interleave(group, dim=1)
                scores = (q @ kk.transpose(2, 3)) / math.sqrt(hp.head_dim)
                scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
                out = (scores.softmax(-1) @ vv).transpose(1, 2).reshape(1, n, hp.n_heads * hp.head_dim)
                x = x + out @ self.p(L + "attention.wo.weight").T
                h = self.rms(x, L + "ffn_norm.weight")
                gate = torch.nn.functional.silu(h @ self.p(L + "feed_forward.w1.weight").T)
                x = x + (gate * (h @ self.p(L + "feed_forward.w3.weight").T)) \
                    @ self.p(L + "feed_forward.w2.weight").T
            h = self.rms(x[:, -1:], "norm.weight")
            head = self.p("tok_embeddings.weight") if self.tied else self.w["output_weight"]
            return (h @ head.T, *presents)

    return Decoder().eval()


def _rotate_half(x):
    import torch

    half = x.shape[-1] // 2
    return torch.cat([-x[..., half:], x[..., :half]], dim=-1)


def io_names(n_layers: int) -> tuple[list[str], list[str]]:
    past = [f"past_key_values.{i}.{kv}" for i in range(n_layers) for kv in ("key", "value")]
    present = [f"present.{i}.{kv}" for i in range(n_layers) for kv in ("key", "value")]
    return ["input_ids", "attention_mask", "position_ids", *past], ["logits", *present]


def _feeds(hp, ids: list[int], past: list, start: int):
    import torch

    n = len(ids)
    return (torch.tensor([ids]), torch.ones(1, start + n, dtype=torch.int64),
            torch.arange(start, start + n)[None], *past)


def _empty_past(hp):
    import torch

    return [torch.zeros(1, hp.n_kv_heads, 0, hp.head_dim) for _ in range(2 * hp.n_layers)]


def export(module, hp, path: Path) -> None:
    import torch

    inputs, outputs = io_names(hp.n_layers)
    axes = {"input_ids": {1: "sequence_length"}, "attention_mask": {1: "total_sequence_length"},
            "position_ids": {1: "sequence_length"}, "logits": {}}
    axes.update({n: {2: "past_sequence_length"} for n in inputs[3:]})
    axes.update({n: {2: "total_sequence_length"} for n in outputs[1:]})
    example = _feeds(hp, [1, 2, 3], [torch.zeros(1, hp.n_kv_heads, 2, hp.head_dim)
                                     for _ in range(2 * hp.n_layers)], 2)
    path.parent.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(module, example, str(path), input_names=inputs, output_names=outputs,
                          dynamic_axes=axes, opset_version=17, dynamo=False)


def torch_greedy(module, hp, ids: list[int], steps: int):
    """Greedy tokens (prefill, then one token per call) and the step-0 logits."""
    import torch

    with torch.no_grad():
        out = module(*_feeds(hp, ids, _empty_past(hp), 0))
        step0, past = out[0][0, -1].numpy().copy(), list(out[1:])
        tokens = [int(out[0][0, -1].argmax())]
        for _ in range(steps - 1):
            out = module(*_feeds(hp, tokens[-1:], past, len(ids) + len(tokens) - 1))
            past = list(out[1:])
            tokens.append(int(out[0][0, -1].argmax()))
    return tokens, step0


def ort_greedy(path: Path, hp, ids: list[int], steps: int):
    import numpy as np
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs, _ = io_names(hp.n_layers)
    past = [np.zeros((1, hp.n_kv_heads, 0, hp.head_dim), np.float32)] * (2 * hp.n_layers)
    tokens, step0, feed, start = [], None, ids, 0
    for _ in range(steps):
        n = len(feed)
        arrays = [np.array([feed], np.int64), np.ones((1, start + n), np.int64),
                  np.arange(start, start + n, dtype=np.int64)[None], *past]
        out = session.run(None, dict(zip(inputs, arrays)))
        step0 = out[0][0, -1] if step0 is None else step0
        past, start = out[1:], start + n
        tokens.append(int(out[0][0, -1].argmax()))
        feed = tokens[-1:]
    return tokens, step0


def against_reference(module, hp, path: Path) -> dict:
    """Step-0 logits and greedy tokens of this module against make llm's reference.json
    (the exported model run eagerly: ``eager_ids``, ``reference_logits.npz``)."""
    import numpy as np

    ref = json.loads(path.read_text())
    logits = np.load(path.with_name(ref["step0_logits"]))
    worst, same = 0.0, []
    for prompt in ref["prompts"]:
        tokens, step0 = torch_greedy(module, hp, prompt["prompt_ids"], 8)
        worst = max(worst, float(np.abs(step0 - logits[prompt["name"]]).max()))
        want = prompt["eager_ids"][:8]  # shorter when EOS came first
        same.append(tokens[:len(want)] == want)
    return {"prompts": len(same), "first_8_greedy_equal": all(same),
            "step0_max_abs_diff": worst}


def write_configs(hp, folder: Path, eos_id: int | None, bos_id: int | None) -> None:
    """What transformers.js reads for a llama text-generation model (no tokenizer: the
    bench feeds token ids)."""
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": hp.dim, "intermediate_size": hp.hidden_dim,
        "num_hidden_layers": hp.n_layers, "num_attention_heads": hp.n_heads,
        "num_key_value_heads": hp.n_kv_heads, "head_dim": hp.head_dim,
        "vocab_size": hp.vocab_size, "rms_norm_eps": hp.norm_eps,
        "rope_theta": hp.rope_freq_base, "max_position_embeddings": hp.context_length,
        "tie_word_embeddings": hp.tied_output, "bos_token_id": bos_id, "eos_token_id": eos_id,
        "torch_dtype": "float32", "use_cache": True,
        "transformers.js_config": {"dtype": "fp32", "use_external_data_format": False},
    }
    (folder / "config.json").write_text(json.dumps(config, indent=1))
    (folder / "generation_config.json").write_text(json.dumps(
        {"bos_token_id": bos_id, "eos_token_id": eos_id, "do_sample": False}, indent=1))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pte_webgpu.export.llm_onnx")
    ap.add_argument("gguf", type=Path)
    ap.add_argument("--out-dir", type=Path, required=True)
    ap.add_argument("--check-tokens", type=int, default=8)
    ap.add_argument("--reference", type=Path, help="make llm's reference.json (default: "
                    "beside the GGUF, when there)")
    args = ap.parse_args(argv)
    start = time.monotonic()
    reader = gguf_llama.open_gguf(args.gguf)
    hp = gguf_llama.read_hparams(reader)
    eos = gguf_llama.field(reader, "tokenizer.ggml.eos_token_id", required=False)
    bos = gguf_llama.field(reader, "tokenizer.ggml.bos_token_id", required=False)
    module = build_module(hp, gguf_llama.state_dict(reader, hp))
    path = args.out_dir / "onnx" / "model.onnx"
    export(module, hp, path)
    write_configs(hp, args.out_dir, eos, bos)
    ids = [(7 * i + 3) % 1000 + 1 for i in range(12)]
    want, want0 = torch_greedy(module, hp, ids, args.check_tokens)
    report = {"gguf": args.gguf.name, "hparams": hp.__dict__, "file": str(path),
              "bytes": path.stat().st_size, "check_prompt": ids, "torch_tokens": want}
    reference = args.reference or args.gguf.with_name("reference.json")
    if reference.is_file():  # make llm's references: the same model as the .pte?
        report["vs_reference"] = against_reference(module, hp, reference)
    try:
        got, got0 = ort_greedy(path, hp, ids, args.check_tokens)
        diff = float(abs(got0 - want0).max())
        report.update(ort_tokens=got, step0_max_abs_diff=diff, holds=got == want and diff < 1e-3)
    except ImportError:
        report.update(holds=None, note="onnxruntime not installed: ONNX not checked")
    ref = report.get("vs_reference")
    if ref and report["holds"] is not False:
        report["holds"] = ref["first_8_greedy_equal"] and ref["step0_max_abs_diff"] < 1e-3
    report["seconds"] = round(time.monotonic() - start, 1)
    (args.out_dir / "export.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "hparams"}), file=sys.stderr)
    return 0 if report["holds"] is not False else 1


if __name__ == "__main__":
    sys.exit(main())
