"""Read a Llama-family GGUF: hyperparameters from its metadata, dequantized weights.

The weights keep GGUF's q/k row order, which is the interleaved-pair RoPE layout of
ExecuTorch's llama example model (llama.cpp's converter permuted HF's rotate-half rows
into it), so they load into that model unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import FormatError, UnsupportedError

# GGUF tensor name -> llama example model parameter name ({i} is the block index)
_BLOCK_TENSORS = {
    "attn_norm": "attention_norm",
    "attn_q": "attention.wq",
    "attn_k": "attention.wk",
    "attn_v": "attention.wv",
    "attn_output": "attention.wo",
    "ffn_norm": "ffn_norm",
    "ffn_gate": "feed_forward.w1",
    "ffn_down": "feed_forward.w2",
    "ffn_up": "feed_forward.w3",
}
_TOP_TENSORS = {"token_embd": "tok_embeddings", "output_norm": "norm", "output": "output"}
# GGUF files name Llama-family models after the code path llama.cpp runs them with
SUPPORTED_ARCHITECTURES = ("llama",)


@dataclass(frozen=True)
class LlamaHParams:
    architecture: str
    name: str
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    hidden_dim: int
    vocab_size: int
    rope_freq_base: float
    norm_eps: float
    context_length: int
    tied_output: bool


def open_gguf(path):
    import gguf

    try:
        return gguf.GGUFReader(str(path))
    except (ValueError, OSError) as exc:  # gguf raises ValueError on a bad magic/version
        raise FormatError(f"{path}: not a readable GGUF file: {exc}") from exc


def field(reader, key: str, default=None, *, required: bool = True):
    f = reader.fields.get(key)
    if f is None:
        if required and default is None:
            raise FormatError(f"GGUF metadata key {key!r} is missing", field=key)
        return default
    return f.contents()


def read_hparams(reader) -> LlamaHParams:
    arch = field(reader, "general.architecture")
    if arch not in SUPPORTED_ARCHITECTURES:
        raise UnsupportedError(
            f"GGUF architecture {arch!r} is not a Llama-family model this exporter converts "
            f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})"
        )

    def hp(key, default=None):
        return field(reader, f"{arch}.{key}", default, required=default is None)

    if hp("expert_count", 0):
        raise UnsupportedError(f"mixture-of-experts GGUF ({arch}.expert_count > 0) is not supported")
    scaling = hp("rope.scaling.type", "none")
    if scaling not in ("none", ""):
        raise UnsupportedError(f"RoPE scaling {scaling!r} ({arch}.rope.scaling.type) is not supported")
    names = {t.name for t in reader.tensors}
    if "rope_freqs.weight" in names:
        raise UnsupportedError("per-frequency RoPE scaling (tensor rope_freqs.weight) is not supported")

    dim = int(hp("embedding_length"))
    n_heads = int(hp("attention.head_count"))
    n_kv_heads = int(hp("attention.head_count_kv", n_heads))
    head_dim = int(hp("attention.key_length", dim // n_heads))
    if int(hp("attention.value_length", head_dim)) != head_dim:
        raise UnsupportedError("key and value head sizes differ; the llama example model needs them equal")
    if int(hp("rope.dimension_count", head_dim)) != head_dim:
        raise UnsupportedError("partial rotary embedding (rope.dimension_count < head size) is not supported")
    if n_heads % n_kv_heads:
        raise FormatError(f"{n_heads} attention heads do not group into {n_kv_heads} KV heads")
    tokens = field(reader, "tokenizer.ggml.tokens", [], required=False)
    embd = _tensor(reader, "token_embd.weight")
    vocab = int(hp("vocab_size", len(tokens) or int(embd.shape[1])))
    return LlamaHParams(
        architecture=arch,
        name=str(field(reader, "general.name", "", required=False)),
        dim=dim,
        n_layers=int(hp("block_count")),
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        hidden_dim=int(hp("feed_forward_length")),
        vocab_size=vocab,
        rope_freq_base=float(hp("rope.freq_base", 10000.0)),
        norm_eps=float(hp("attention.layer_norm_rms_epsilon")),
        context_length=int(hp("context_length", 2048)),
        tied_output="output.weight" not in names,
    )


def _tensor(reader, name):
    for t in reader.tensors:
        if t.name == name:
            return t
    raise FormatError(f"GGUF tensor {name!r} is missing", field=name)


def dequantize(tensor) -> np.ndarray:
    """float32 array in torch order ([out, in] for a weight matrix)."""
    from gguf import quants

    shape = tuple(int(d) for d in reversed(tensor.shape))  # GGUF lists the fastest dim first
    values = quants.dequantize(tensor.data, tensor.tensor_type)
    return np.array(values, dtype=np.float32).reshape(shape)  # a copy: GGUF data is a read-only map


def parameter_name(gguf_name: str) -> str:
    """llama example model state-dict key for a GGUF tensor name."""
    base, _, suffix = gguf_name.rpartition(".")
    if suffix != "weight":
        raise UnsupportedError(f"GGUF tensor {gguf_name!r}: only weights are supported (no biases)")
    if base in _TOP_TENSORS:
        return f"{_TOP_TENSORS[base]}.weight"
    parts = base.split(".")
    if len(parts) == 3 and parts[0] == "blk" and parts[1].isdigit() and parts[2] in _BLOCK_TENSORS:
        return f"layers.{parts[1]}.{_BLOCK_TENSORS[parts[2]]}.weight"
    raise UnsupportedError(f"GGUF tensor {gguf_name!r} has no place in the llama example model")


def state_dict(reader, hp: LlamaHParams) -> dict:
    """Dequantized float32 torch tensors keyed like the llama example model."""
    import torch

    out = {}
    for t in reader.tensors:
        out[parameter_name(t.name)] = torch.from_numpy(dequantize(t))
    if hp.tied_output:
        out["output.weight"] = out["tok_embeddings.weight"]
    return out
