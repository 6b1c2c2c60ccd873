"""Greedy references for an exported GGUF model, for the tests that run the .pte.

    python -m pte_webgpu.export.llm_reference MODEL.gguf --out build/llm/reference.json
        [--max-seq-len 1024] [--max-context-len N] [--new-tokens 32] [--quantize q4]

For each prompt it records the prompt ids (pte_webgpu.llm's tokenizer and chat template),
then two greedy continuations until EOS or --new-tokens:
- ``eager_ids``: the llama example model exactly as exported (GGUF weights, source
  transforms with sdpa_with_kv_cache and its KV cache), run eagerly in fp32: prefill of the
  whole prompt in one call, then one token per call, as the program runs;
- ``hf_ids``: an independent implementation, HF transformers' LlamaForCausalLM loaded from
  the same GGUF (it un-permutes q/k into HF's rotate-half layout and uses its own RoPE).
Step-0 logits of the eager model go to ``reference_logits.npz`` (one float32 row per prompt).
``layout_check`` compares the two models' step-0 logits: GGUF's q/k rows are in the
interleaved layout the llama example expects iff they agree to float rounding.

With ``--quantize PRESET`` (llama_pte.QUANTIZE) the eager model is the quantized one that
``pte-webgpu convert --dtype PRESET`` lowers (its weights' digest is recorded, to be matched
with the program's in OUT.export.json); ``hf_ids`` are left out (a float model is not its
twin) and ``accuracy`` records its teacher-forced top-1 agreement with a float64
transformers model of the GGUF (llm_accuracy.py).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from ..llm.chat_template import ChatTemplate
from ..llm.tokenizer import Tokenizer
from . import exact_q4, gguf_llama, llama_pte, llm_accuracy, tokenizer_json

PROMPTS = [
    {"name": "chat_capital", "chat": True, "text": "What is the capital of France?"},
    {"name": "chat_haiku", "chat": True, "text": "Write a haiku about the sea."},
    {"name": "plain_fox", "chat": False, "text": "The quick brown fox"},
    {"name": "plain_code", "chat": False, "text": "def fibonacci(n):\n    "},
]


def prompt_ids(tokenizer: Tokenizer, template: ChatTemplate, prompt: dict) -> list[int]:
    """As LanguageModel.prompt_ids: a chat through the template (which writes BOS itself)."""
    text = prompt["text"]
    if prompt["chat"]:
        text = template.render([{"role": "user", "content": text}], add_generation_prompt=True)
        return tokenizer.encode(text)
    return tokenizer.encode(text, add_special=True)


def eager_greedy(model, ids: list[int], new_tokens: int, eos: int):
    """(generated ids, step-0 logits) from the exported model run eagerly."""
    import torch

    for name, buf in model.named_buffers():
        if name.endswith(("k_cache", "v_cache")):
            buf.zero_()

    def step(tokens, pos):
        out = model(torch.tensor([tokens], dtype=torch.long),
                    {"input_pos": torch.tensor([pos], dtype=torch.long)})
        logits = out[0] if isinstance(out, tuple) else out
        return logits.reshape(-1, logits.shape[-1])[-1]

    with torch.no_grad():
        logits = step(ids, 0)
        step0 = logits.float().numpy().copy()
        out, pos = [], len(ids)
        while len(out) < new_tokens:
            token = int(torch.argmax(logits))
            out.append(token)
            if token == eos:
                break
            logits = step([token], pos)
            pos += 1
    return out, step0


def rotate_half_rows(w, n_heads: int):
    """q/k rows reordered per head from interleaved pairs (0,1),(2,3).. to halves (0,2,..|1,3,..)."""
    head_dim = w.shape[0] // n_heads
    order = [h * head_dim + i for h in range(n_heads)
             for i in [*range(0, head_dim, 2), *range(1, head_dim, 2)]]
    return w[order]


def hf_model(gguf_path: Path, dtype=None):
    """transformers' Llama from the GGUF through its own GGUF loader (which un-permutes q/k).

    ``from_pretrained(gguf_file=)`` would need ``accelerate``; the loader underneath it,
    ``load_gguf_checkpoint``, does the same conversion without it.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.modeling_gguf_pytorch_utils import load_gguf_checkpoint

    config = dict(load_gguf_checkpoint(str(gguf_path))["config"])
    model_type = config.pop("model_type")
    dtype = dtype or torch.float32
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type, **config), dtype=dtype)
    tensors = load_gguf_checkpoint(str(gguf_path), return_tensors=True, model_to_load=model)["tensors"]
    missing, unexpected = model.load_state_dict(
        {k: torch.as_tensor(v, dtype=dtype) for k, v in tensors.items()}, strict=False
    )
    if getattr(model.config, "tie_word_embeddings", False):
        model.tie_weights()
        missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise ValueError(f"transformers' GGUF tensors do not fit: missing {missing}, unexpected {unexpected}")
    return model.eval()


def hf_greedy(model, ids: list[int], new_tokens: int, eos: int):
    import torch

    with torch.no_grad():
        step0 = model(torch.tensor([ids])).logits[0, -1].float().numpy().copy()
        out = model.generate(
            torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
            max_new_tokens=new_tokens, do_sample=False, eos_token_id=eos, pad_token_id=eos,
        )
    return [int(t) for t in out[0, len(ids):]], step0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pte_webgpu.export.llm_reference")
    ap.add_argument("gguf", type=Path)
    ap.add_argument("--out", type=Path, default=Path("build/llm/reference.json"))
    ap.add_argument("--max-seq-len", type=int, default=1024)
    ap.add_argument("--max-context-len", type=int, default=None)
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--quantize", choices=[k for k in llama_pte.QUANTIZE if k], default=None)
    ap.add_argument("--accuracy", action="store_true",
                    help="--quantize: also the teacher-forced top-1 agreement with a float64 "
                    "model of the GGUF (minutes more; make llm-accuracy)")
    args = ap.parse_args(argv)
    if args.quantize:
        return quantized_reference(args)
    ctx = args.max_context_len or args.max_seq_len
    start = time.monotonic()

    reader = gguf_llama.open_gguf(args.gguf)
    hp = gguf_llama.read_hparams(reader)
    tokenizer = Tokenizer(tokenizer_json.tokenizer_dict(reader))
    template = ChatTemplate.from_tokenizer(tokenizer)
    eos = tokenizer.eos_id
    weights = gguf_llama.state_dict(reader, hp)
    model = llama_pte.source_transformed(llama_pte.build_model(hp, weights, args.max_seq_len, ctx))
    # Control for the layout check: the same model with q/k rows in HF's rotate-half order.
    for key, weight in list(weights.items()):
        if key.endswith(("attention.wq.weight", "attention.wk.weight")):
            heads = hp.n_heads if key.endswith("wq.weight") else hp.n_kv_heads
            weights[key] = rotate_half_rows(weight, heads)
    control = llama_pte.source_transformed(llama_pte.build_model(hp, weights, args.max_seq_len, ctx))
    del weights
    hf = hf_model(args.gguf)

    records, logits = [], {}
    worst, control_diff = 0.0, None
    for prompt in PROMPTS:
        ids = prompt_ids(tokenizer, template, prompt)
        if control_diff is None:
            _, control_step0 = eager_greedy(control, ids, 1, eos)
        eager_ids, eager_step0 = eager_greedy(model, ids, args.new_tokens, eos)
        hf_ids, hf_step0 = hf_greedy(hf, ids, args.new_tokens, eos)
        diff = float(np.abs(eager_step0 - hf_step0).max())
        if control_diff is None:
            control_diff = float(np.abs(control_step0 - hf_step0).max())
        worst = max(worst, diff)
        logits[prompt["name"]] = eager_step0.astype(np.float32)
        agree = next((i for i, (a, b) in enumerate(zip(eager_ids, hf_ids)) if a != b), None)
        records.append({
            **prompt,
            "prompt_ids": ids,
            "eager_ids": eager_ids,
            "hf_ids": hf_ids,
            "eager_text": tokenizer.decode(eager_ids, skip_special=True),
            "hf_text": tokenizer.decode(hf_ids, skip_special=True),
            "first_difference": agree,
            "step0_argmax": int(np.argmax(eager_step0)),
            "step0_max_abs_diff_vs_hf": diff,
        })
        print(f"{prompt['name']}: {records[-1]['eager_text']!r} (hf equal: {eager_ids == hf_ids}, "
              f"step-0 logits max diff {diff:.2e})", file=sys.stderr)

    logits_path = args.out.with_name(args.out.stem + "_logits.npz")
    np.savez(logits_path, **logits)
    report = {
        "gguf": args.gguf.name,
        "max_seq_len": args.max_seq_len,
        "max_context_len": ctx,
        "new_tokens": args.new_tokens,
        "eos_id": eos,
        "step0_logits": logits_path.name,
        "prompts": records,
        "layout_check": {
            "claim": "GGUF q/k rows are in the llama example's interleaved RoPE layout",
            "max_abs_step0_logit_diff_vs_hf": worst,
            "control_rotate_half_rows_diff_vs_hf": control_diff,
            "holds": worst < 1e-2,
        },
        "seconds": round(time.monotonic() - start, 1),
    }
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    return 0 if worst < 1e-2 else 1


def quantized_reference(args) -> int:
    """reference-<preset>.json: greedy ids of the quantized eager model, its weights' digest
    and its top-1 agreement with the float64 model."""
    import torch

    ctx = args.max_context_len or args.max_seq_len
    start = time.monotonic()
    reader = gguf_llama.open_gguf(args.gguf)
    hp = gguf_llama.read_hparams(reader)
    tokenizer = Tokenizer(tokenizer_json.tokenizer_dict(reader))
    template = ChatTemplate.from_tokenizer(tokenizer)
    weights = gguf_llama.state_dict(reader, hp)
    model = llama_pte.source_transformed(
        llama_pte.build_model(hp, weights, args.max_seq_len, ctx), args.quantize,
        exact_q4.groups(reader, hp))
    digest = llama_pte.weights_digest(model)
    error = llm_accuracy.weight_error(model, weights)
    del weights
    print(f"quantization error: {error}", file=sys.stderr)
    records, logits = [], {}
    for prompt in PROMPTS:
        ids = prompt_ids(tokenizer, template, prompt)
        eager_ids, step0 = eager_greedy(model, ids, args.new_tokens, tokenizer.eos_id)
        logits[prompt["name"]] = step0.astype(np.float32)
        records.append({**prompt, "prompt_ids": ids, "eager_ids": eager_ids,
                        "eager_text": tokenizer.decode(eager_ids, skip_special=True),
                        "step0_argmax": int(np.argmax(step0))})
        print(f"{prompt['name']}: {records[-1]['eager_text']!r}", file=sys.stderr)
    accuracy = None
    if args.accuracy:
        accuracy = llm_accuracy.top1_agreement(model, hf_model(args.gguf, torch.float64),
                                               tokenizer)
        print(f"teacher-forced top-1 vs float64: {accuracy}", file=sys.stderr)
    logits_path = args.out.with_name(args.out.stem + "_logits.npz")
    np.savez(logits_path, **logits)
    report = {
        "gguf": args.gguf.name,
        "quantize": {"preset": args.quantize, **llama_pte.QUANTIZE[args.quantize]},
        "weights_sha256": digest,
        "weight_error_vs_gguf": error,
        "max_seq_len": args.max_seq_len,
        "max_context_len": ctx,
        "new_tokens": args.new_tokens,
        "eos_id": tokenizer.eos_id,
        "step0_logits": logits_path.name,
        "prompts": records,
        "accuracy": accuracy and {
            "against": "transformers LlamaForCausalLM, float64, GGUF weights",
            "teacher_forced_texts": len(llm_accuracy.TEXTS), **accuracy},
        "seconds": round(time.monotonic() - start, 1),
    }
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
