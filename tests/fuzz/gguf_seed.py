"""Small real GGUF files for the GGUF fuzzer, written with gguf.GGUFWriter (llama.cpp's own
writer): a 2-layer llama (dim 64, 4 heads, 2 KV heads, vocab 40) whose weights are Q4_0,
Q4_1, Q8_0, F16 and F32 tensors, with a byte-level BPE tokenizer; and variants of it that
are well-formed GGUF but wrong as a model (missing or mistyped keys, zero heads, a tensor
of the wrong shape, an unknown tensor), so the mutations start from both kinds; and the
other converted families' extras: qwen2 (q/k/v biases), qwen3 (q/k norms), llama with
Llama 3 scaling factors (rope_freqs.weight), phi3 (fused attn_qkv and gate/up ffn_up in place
of the five tensors they hold, LongRoPE factors and keys, a sliding window)."""

from __future__ import annotations

import numpy as np

DIM, HEADS, KV_HEADS, HIDDEN, VOCAB, LAYERS = 64, 4, 2, 64, 40, 2
HEAD_DIM = DIM // HEADS

# GGUF name -> (torch-order shape, GGML type); block tensors get blk.{i}. in front
_TOP = {"token_embd.weight": ((VOCAB, DIM), "Q8_0"), "output_norm.weight": ((DIM,), "F32"),
        "output.weight": ((VOCAB, DIM), "F16")}
_BLOCK = {"attn_norm.weight": ((DIM,), "F32"), "ffn_norm.weight": ((DIM,), "F32"),
          "attn_q.weight": ((DIM, DIM), "Q4_0"), "attn_k.weight": ((KV_HEADS * HEAD_DIM, DIM), "Q4_1"),
          "attn_v.weight": ((KV_HEADS * HEAD_DIM, DIM), "Q8_0"), "attn_output.weight": ((DIM, DIM), "F16"),
          "ffn_gate.weight": ((HIDDEN, DIM), "Q4_0"), "ffn_up.weight": ((HIDDEN, DIM), "Q4_1"),
          "ffn_down.weight": ((DIM, HIDDEN), "Q8_0")}


# per family: (architecture, extra block tensors, extra top tensors)
_FAMILY = {
    "qwen2": ("qwen2", {"attn_q.bias": ((DIM,), "F32"), "attn_k.bias": ((KV_HEADS * HEAD_DIM,), "F32"),
                        "attn_v.bias": ((KV_HEADS * HEAD_DIM,), "F16")}, {}),
    "qwen3": ("qwen3", {"attn_q_norm.weight": ((HEAD_DIM,), "F32"),
                        "attn_k_norm.weight": ((HEAD_DIM,), "F32")}, {}),
    "llama_rope_freqs": ("llama", {}, {"rope_freqs.weight": ((HEAD_DIM // 2,), "F32")}),
    "phi3": ("phi3", {"attn_qkv.weight": ((DIM + 2 * KV_HEADS * HEAD_DIM, DIM), "Q8_0"),
                      "ffn_up.weight": ((2 * HIDDEN, DIM), "Q4_0")},
             {"rope_factors_short.weight": ((HEAD_DIM // 2,), "F32"),
              "rope_factors_long.weight": ((HEAD_DIM // 2,), "F16")}),
}
_FUSED_AWAY = ("attn_q.weight", "attn_k.weight", "attn_v.weight", "ffn_gate.weight")  # phi3


def tensors(variant: str = "base") -> dict:
    arch, block, top = _FAMILY.get(variant, ("llama", {}, {}))
    base = {k: v for k, v in _BLOCK.items() if arch != "phi3" or k not in _FUSED_AWAY}
    out = {**_TOP, **top}
    for i in range(LAYERS):
        out.update({f"blk.{i}.{k}": v for k, v in {**base, **block}.items()})
    return out


def write(path, variant: str = "base", seed: int = 0) -> None:
    """Write the tiny llama GGUF (or one of VARIANTS) to ``path``."""
    import gguf

    rng = np.random.default_rng(seed)
    arch = _FAMILY.get(variant, ("llama",))[0]
    w = gguf.GGUFWriter(str(path), arch)
    hp = {"context_length": 128, "embedding_length": DIM, "block_count": LAYERS,
          "feed_forward_length": HIDDEN, "attention.head_count": HEADS,
          "attention.head_count_kv": KV_HEADS}
    if variant == "zero_heads":
        hp["attention.head_count"] = 0
    if variant == "missing_key":
        del hp["feed_forward_length"]
    for key, value in hp.items():
        w.add_uint32(f"{arch}.{key}", value)
    if variant == "string_number":
        w.add_string(f"{arch}.rope.freq_base", "ten thousand")
    else:
        w.add_float32(f"{arch}.rope.freq_base", 10000.0)
    w.add_float32(f"{arch}.attention.layer_norm_rms_epsilon", 1e-5)
    if arch == "phi3":
        w.add_uint32(f"{arch}.attention.sliding_window", 64)
        w.add_uint32(f"{arch}.rope.scaling.original_context_length", 32)
        w.add_float32(f"{arch}.rope.scaling.attn_factor", 1.1)
    w.add_name("tiny fuzz llama")
    tokens = [f"t{i}" for i in range(VOCAB - 3)] + ["<s>", "</s>", "<|im_end|>"]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("smollm")
    w.add_token_list(tokens)
    w.add_token_types([1] * (VOCAB - 3) + [3, 3, 3])
    w.add_token_merges(["t 1", "t 2", "t1 0"])
    w.add_bos_token_id(VOCAB - 3)
    w.add_eos_token_id(VOCAB - 2)
    w.add_chat_template("{% for m in messages %}{{ m['content'] }}{% endfor %}")
    for name, (shape, type_name) in tensors(variant).items():
        if variant == "wrong_shape" and name == "blk.1.ffn_down.weight":
            shape = (DIM, HIDDEN - 32)
        values = (rng.standard_normal(shape) * 0.1).astype(np.float32)
        if name.startswith("rope_f"):  # divisors (rope_freqs, rope_factors_*): positive
            values = 1 + np.abs(values) * 30
        qtype = gguf.GGMLQuantizationType[type_name]
        if type_name in ("F32", "F16"):
            w.add_tensor(name, values.astype(np.float16 if type_name == "F16" else np.float32))
        else:
            w.add_tensor(name, gguf.quants.quantize(values, qtype), raw_dtype=qtype)
    if variant == "unknown_tensor":
        w.add_tensor("blk.0.attn_q.bias", np.zeros(DIM, np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


VARIANTS = ["base", "zero_heads", "missing_key", "string_number", "wrong_shape", "unknown_tensor",
            *_FAMILY]
