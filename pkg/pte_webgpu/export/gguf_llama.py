"""Read a Llama-family GGUF (``llama``, ``qwen2``, ``qwen3``, ``phi3``: gguf_arch.py):
hyperparameters from its metadata, dequantized weights keyed like ExecuTorch's llama example
model.

q/k rows end in the interleaved-pair RoPE layout of that model: ``llama`` GGUFs hold them so
(llama.cpp's converter permuted HF's rotate-half rows), ``qwen2``/``qwen3``/``phi3`` in HF's
order, reordered here (gguf_arch.interleave_rows). Phi-3's fused q/k/v and gate/up tensors
are split into the model's own (split_fused).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from ..errors import FormatError, UnsupportedError
from . import gguf_arch, gguf_bounds

# GGUF tensor name -> llama example model parameter name ({i} is the block index)
_BLOCK_TENSORS = {
    "attn_norm": "attention_norm",
    "attn_q": "attention.wq",
    "attn_k": "attention.wk",
    "attn_v": "attention.wv",
    "attn_output": "attention.wo",
    "attn_q_norm": "attention.q_norm_fn",
    "attn_k_norm": "attention.k_norm_fn",
    "ffn_norm": "ffn_norm",
    "ffn_gate": "feed_forward.w1",
    "ffn_down": "feed_forward.w2",
    "ffn_up": "feed_forward.w3",
    "post_attention_norm": "attention.post_norm",  # gemma
    "post_ffw_norm": "feed_forward.post_norm",  # gemma
}
_QK_NORMS = ("attn_q_norm", "attn_k_norm")
_POST_NORMS = ("post_attention_norm", "post_ffw_norm")
_TOP_TENSORS = {"token_embd": "tok_embeddings", "output_norm": "norm", "output": "output"}
# GGUF files name Llama-family models after the code path llama.cpp runs them with
SUPPORTED_ARCHITECTURES = tuple(gguf_arch.FAMILIES)
_BIASED = ("attn_q", "attn_k", "attn_v")  # the only biases a family may have (qkv_bias)
# Phi-3's fused block tensors (Family.fused) under keys of their own until split_fused, and
# per fused key its row blocks in the GGUF's order: (label, llama example parameter)
_FUSED = {"attn_qkv": "attention.wqkv", "ffn_up": "feed_forward.w13"}
_FUSED_PARTS = {
    "attention.wqkv.weight": (("q", "attention.wq.weight"), ("k", "attention.wk.weight"),
                              ("v", "attention.wv.weight")),
    "feed_forward.w13.weight": (("gate", "feed_forward.w1.weight"), ("up", "feed_forward.w3.weight")),
}
# read by read_hparams, not model weights
_LONGROPE_TENSORS = ("rope_factors_short.weight", "rope_factors_long.weight")


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
    qkv_bias: bool = False
    qk_norm: bool = False
    rope_halves: bool = False  # GGUF q/k rows in rotate-half order (reordered on load)
    # rope_freqs.weight (Llama 3.1+ scaling): each frequency is divided by its factor
    rope_freq_factors: tuple | None = None
    # Gemma (gemma_model.py): scores times attn_scale (llama.cpp's rule, the GGUF has no key),
    # tanh soft-caps, sliding-window layers (window, pattern), their RoPE base, and a linear
    # RoPE factor on the global layers
    gemma: bool = False
    attn_scale: float | None = None
    attn_softcap: float | None = None
    final_softcap: float | None = None
    sliding_pattern: int = 0
    rope_local_base: float | None = None
    rope_linear_factor: float | None = None
    fused: bool = False  # Phi-3: blk.N.attn_qkv and ffn_up hold q/k/v and gate/up stacked
    # LongRoPE (Phi-3 128k, Phi-3.5): divisors per frequency, the context they switch at, the
    # cos/sin scale (gguf_arch.longrope picks the set)
    rope_factors_short: tuple | None = None
    rope_factors_long: tuple | None = None
    rope_original_context: int = 0
    rope_attn_factor: float = 1.0
    sliding_window: int = 0  # attention.sliding_window, 0: none (Phi-3: gguf_arch.check_sliding_window)


# What gguf raises on bytes it cannot parse (bad enum values, short reads, reshapes of
# truncated data, duplicate keys, undecodable strings); each becomes a FormatError.
_PARSE_ERRORS = (ValueError, IndexError, KeyError, TypeError, OverflowError, struct.error,
                 EOFError, RecursionError)


def open_gguf(path):
    import gguf

    try:
        gguf_bounds.check(path)  # counts and extents against the file size, before gguf allocates
        return gguf.GGUFReader(str(path))
    except OSError as exc:
        raise FormatError(f"{path}: cannot read: {exc}") from exc
    except _PARSE_ERRORS as exc:
        raise FormatError(f"{path}: not a readable GGUF file: {type(exc).__name__}: {exc}",
                          field="header") from exc


def field(reader, key: str, default=None, *, required: bool = True):
    f = reader.fields.get(key)
    if f is None:
        if required and default is None:
            raise FormatError(f"GGUF metadata key {key!r} is missing", field=key)
        return default
    try:
        return f.contents()
    except _PARSE_ERRORS as exc:
        raise FormatError(f"GGUF metadata value is unreadable: {type(exc).__name__}: {exc}",
                          field=key) from exc


def listing(reader, key: str, kind, default=None) -> list:
    """A metadata array whose items are all ``kind`` (str or int); FormatError otherwise."""
    value = field(reader, key, default, required=default is None)
    if not isinstance(value, list) or not all(type(v) is kind for v in value):
        raise FormatError(f"GGUF metadata value is not an array of {kind.__name__}", field=key)
    return value


def number(reader, key: str, kind=int, default=None, *, least=None):
    """A metadata value as ``kind`` (int or float), at least ``least``; FormatError otherwise."""
    value = field(reader, key, default, required=default is None)
    try:
        if isinstance(value, (str, bytes, list)) or value is None:
            raise TypeError(type(value).__name__)
        out = kind(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise FormatError(f"GGUF metadata value {value!r:.60} is not a number ({exc})", field=key) from None
    if least is not None and not out >= least:  # "not >=" also rejects NaN
        raise FormatError(f"GGUF metadata value {out} is below {least}", field=key)
    return out


def read_hparams(reader) -> LlamaHParams:
    arch = field(reader, "general.architecture")
    fam = gguf_arch.family(arch)

    def hp(key, default=None, kind=int, least=1):
        return number(reader, f"{arch}.{key}", kind, default, least=least)

    if hp("expert_count", 0, least=0):
        raise UnsupportedError(f"mixture-of-experts GGUF ({arch}.expert_count > 0) is not supported")
    scaling = field(reader, f"{arch}.rope.scaling.type", "none", required=False)
    linear = scaling == "linear" and arch == "gemma3"  # Gemma 3 >= 4B, global layers only
    if scaling not in ("none", "") and not linear:
        raise UnsupportedError(f"RoPE scaling {scaling!r} ({arch}.rope.scaling.type) is not supported"
                               f"{' for ' + repr(arch) if scaling == 'linear' else ''}")
    names = {t.name for t in reader.tensors}

    dim = hp("embedding_length")
    n_heads = hp("attention.head_count")
    n_kv_heads = hp("attention.head_count_kv", n_heads)
    head_dim = hp("attention.key_length", max(dim // n_heads, 1))
    if hp("attention.value_length", head_dim) != head_dim:
        raise UnsupportedError("key and value head sizes differ; the llama example model needs them equal")
    if hp("rope.dimension_count", head_dim) != head_dim:
        raise UnsupportedError("partial rotary embedding (rope.dimension_count < head size) is not supported")
    if n_heads % n_kv_heads:
        raise FormatError(f"{n_heads} attention heads do not group into {n_kv_heads} KV heads")
    tokens = field(reader, "tokenizer.ggml.tokens", [], required=False)
    embd = _tensor(reader, "token_embd.weight")
    if len(embd.shape) != 2:
        raise FormatError(f"token_embd.weight has shape {list(embd.shape)}, not [dim, vocab]",
                          field="token_embd.weight")
    vocab = hp("vocab_size", len(tokens) if isinstance(tokens, list) and tokens else int(embd.shape[1]))
    factors = None
    if "rope_freqs.weight" in names:
        factors = tuple(float(f) for f in _rope_factors(reader, head_dim))
    n_layers = hp("block_count")
    gemma = _gemma_hparams(hp, arch, fam, dim, n_heads, head_dim, n_layers, linear) if fam.gemma else {}
    context = hp("context_length", 2048)
    phi3 = _phi3_hparams(reader, arch, head_dim, context, names) if fam.longrope else {}
    return LlamaHParams(
        architecture=arch,
        name=str(field(reader, "general.name", "", required=False)),
        dim=dim,
        n_layers=n_layers,
        n_heads=n_heads,
        n_kv_heads=n_kv_heads,
        head_dim=head_dim,
        hidden_dim=hp("feed_forward_length"),
        vocab_size=vocab,
        rope_freq_base=hp("rope.freq_base", 10000.0, float, least=1e-30),
        norm_eps=hp("attention.layer_norm_rms_epsilon", kind=float, least=0.0),
        context_length=context,
        tied_output="output.weight" not in names,
        qkv_bias=fam.qkv_bias,
        qk_norm=fam.qk_norm,
        rope_halves=fam.rope_halves,
        rope_freq_factors=factors,
        fused=fam.fused,
        **gemma,
        **phi3,
    )


# llama.cpp scales Gemma's scores by 1/sqrt(head size), except in the 27B models (46
# layers: Gemma 2, 62: Gemma 3), whose query_pre_attn_scalar is width / heads
_GEMMA_27B_LAYERS = {"gemma2": 46, "gemma3": 62}


def _gemma_hparams(hp, arch, fam, dim, n_heads, head_dim, n_layers, linear) -> dict:
    big = n_layers == _GEMMA_27B_LAYERS[arch]
    out = {"gemma": True, "attn_scale": 1 / math.sqrt(dim / n_heads if big else head_dim),
           "sliding_pattern": fam.sliding_pattern,
           "sliding_window": hp("attention.sliding_window", 0, least=0)}
    if arch == "gemma2":  # soft-caps of 0 (or absent) switch it off
        out["attn_softcap"] = hp("attn_logit_softcapping", 0.0, float, least=0.0) or None
        out["final_softcap"] = hp("final_logit_softcapping", 0.0, float, least=0.0) or None
    else:  # llama.cpp's default base for Gemma 3's sliding layers
        out["rope_local_base"] = hp("rope.freq_base_swa", 10000.0, float, least=1e-30)
        if linear:
            out["rope_linear_factor"] = hp("rope.scaling.factor", kind=float, least=1e-30)
    return out


def _phi3_hparams(reader, arch: str, head_dim: int, context: int, names: set) -> dict:
    """LongRoPE and the sliding window as llama.cpp's converter writes them for Phi-3: both
    factor tensors or neither, rope.scaling.original_context_length (default: the context
    length, as llama.cpp), rope.scaling.attn_factor (default 1, as llama.cpp)."""
    out = {"sliding_window": number(reader, f"{arch}.attention.sliding_window", int, 0, least=0)}
    present = [n for n in _LONGROPE_TENSORS if n in names]
    if len(present) == 1:
        missing = next(n for n in _LONGROPE_TENSORS if n not in names)
        raise FormatError(f"GGUF tensor {missing!r} is missing (LongRoPE needs both factor "
                          f"sets; {present[0]!r} is there)", field=missing)
    if present:
        short, long = (tuple(float(f) for f in _rope_factors(reader, head_dim, n))
                       for n in _LONGROPE_TENSORS)
        out.update(
            rope_factors_short=short, rope_factors_long=long,
            rope_original_context=number(reader, f"{arch}.rope.scaling.original_context_length",
                                         int, context, least=1),
            rope_attn_factor=number(reader, f"{arch}.rope.scaling.attn_factor", float, 1.0,
                                    least=1e-30))
    return out


def _rope_factors(reader, head_dim: int, name: str = "rope_freqs.weight"):
    t = _tensor(reader, name)
    if tuple(int(d) for d in t.shape) != (head_dim // 2,):
        raise FormatError(f"{name} has shape {list(t.shape)}, RoPE needs "
                          f"[{head_dim // 2}] (head size / 2)", field=name)
    factors = dequantize(t)
    if not (factors > 0).all():
        raise FormatError(f"{name} holds factors <= 0", field=name)
    return factors


def _tensor(reader, name):
    for t in reader.tensors:
        if t.name == name:
            return t
    raise FormatError(f"GGUF tensor {name!r} is missing", field=name)


def dequantize(tensor) -> np.ndarray:
    """float32 array in torch order ([out, in] for a weight matrix)."""
    from gguf import quants

    shape = tuple(int(d) for d in reversed(tensor.shape))  # GGUF lists the fastest dim first
    try:
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite values: checked below
            values = np.array(quants.dequantize(tensor.data, tensor.tensor_type), dtype=np.float32)
        values = values.reshape(shape)  # a copy: GGUF data is a read-only map
    except NotImplementedError:
        raise UnsupportedError(f"GGUF tensor {tensor.name!r}: type {tensor.tensor_type.name} "
                               f"cannot be dequantized") from None
    except _PARSE_ERRORS as exc:
        raise FormatError(f"GGUF tensor data does not fit its shape {list(shape)}: {exc}",
                          field=tensor.name) from exc
    if not np.isfinite(values).all():
        raise FormatError(f"GGUF tensor holds {values.size - np.isfinite(values).sum()} non-finite "
                          f"values (NaN/inf scales or data)", field=tensor.name)
    return values


def parameter_name(gguf_name: str, hp: LlamaHParams | None = None) -> str:
    """llama example model state-dict key for a GGUF tensor name."""
    base, _, suffix = gguf_name.rpartition(".")
    biased = hp is not None and hp.qkv_bias and base.rpartition(".")[2] in _BIASED
    if suffix != "weight" and not (suffix == "bias" and biased):
        allowed = " (and q/k/v biases)" if hp is not None and hp.qkv_bias else " (no biases)"
        raise UnsupportedError(f"GGUF tensor {gguf_name!r}: only weights are supported{allowed}")
    if base.endswith(_POST_NORMS) and not (hp is not None and hp.gemma):
        raise UnsupportedError(f"GGUF tensor {gguf_name!r}: post norms are not part of architecture "
                               f"{hp.architecture if hp else '?'!r}")
    if base.endswith(_QK_NORMS) and not (hp is not None and hp.qk_norm):
        raise UnsupportedError(f"GGUF tensor {gguf_name!r}: q/k norms are not part of architecture "
                               f"{hp.architecture if hp else '?'!r}")
    if base in _TOP_TENSORS:
        return f"{_TOP_TENSORS[base]}.weight"
    parts = base.split(".")
    blocks = _block_tensors(hp)
    if len(parts) == 3 and parts[0] == "blk" and parts[1].isdigit() and parts[2] in blocks:
        return f"layers.{parts[1]}.{blocks[parts[2]]}.{suffix}"
    raise UnsupportedError(f"GGUF tensor {gguf_name!r} has no place in the llama example model")


def _block_tensors(hp: LlamaHParams | None) -> dict:
    """_BLOCK_TENSORS of ``hp``'s family: with Phi-3's fused tensors in place of the ones
    they hold (its ffn_up is gate and up)."""
    if hp is None or not hp.fused:
        return _BLOCK_TENSORS
    held = ("attn_q", "attn_k", "attn_v", "ffn_gate", "ffn_up")
    return {**{g: k for g, k in _BLOCK_TENSORS.items() if g not in held}, **_FUSED}


def _fused_rows(name: str, leaf: str, shape: tuple, hp: LlamaHParams) -> list[int]:
    """Rows of each part of fused tensor ``name`` (parameter ``leaf``); a FormatError naming
    the parts and their sizes unless ``shape`` holds exactly them."""
    rows = [expected_shape(part, hp)[0] for _, part in _FUSED_PARTS[leaf]]
    if tuple(shape) != (sum(rows), hp.dim):
        labels = " + ".join(label for label, _ in _FUSED_PARTS[leaf])
        sizes = (f"{hp.n_heads} heads, {hp.n_kv_heads} KV heads of {hp.head_dim}" if "wqkv" in leaf
                 else f"feed_forward_length {hp.hidden_dim}")
        raise FormatError(f"fused tensor has shape {list(shape)}; {labels} need "
                          f"{' + '.join(map(str, rows))} = {sum(rows)} rows of width {hp.dim} "
                          f"({sizes})", field=name)
    return rows


def split_fused(name: str, key: str, w: np.ndarray, hp: LlamaHParams) -> dict:
    """Phi-3's fused tensor ``name`` (model key ``key``, array ``w`` [rows, dim]) as the llama
    example's parameters: attn_qkv -> wq, wk, wv (q, k, v rows in that order); ffn_up -> w1
    (the gate: the first half, the one SiLU is applied to) and w3 (up)."""
    leaf = key.split(".", 2)[-1]
    prefix = key[: len(key) - len(leaf)]  # "layers.N."
    out, start = {}, 0
    for (_, part), n in zip(_FUSED_PARTS[leaf], _fused_rows(name, leaf, w.shape, hp)):
        out[prefix + part] = w[start:start + n]
        start += n
    return out


def expected_shape(name: str, hp: LlamaHParams) -> tuple:
    """Torch-order shape of llama example parameter ``name`` under ``hp``."""
    q, kv = hp.n_heads * hp.head_dim, hp.n_kv_heads * hp.head_dim
    leaf = name.split(".", 2)[-1] if name.startswith("layers.") else name
    return {
        "attention.wq.bias": (q,), "attention.wk.bias": (kv,), "attention.wv.bias": (kv,),
        "attention.q_norm_fn.weight": (hp.head_dim,), "attention.k_norm_fn.weight": (hp.head_dim,),
        "tok_embeddings.weight": (hp.vocab_size, hp.dim), "output.weight": (hp.vocab_size, hp.dim),
        "norm.weight": (hp.dim,), "attention_norm.weight": (hp.dim,), "ffn_norm.weight": (hp.dim,),
        "attention.post_norm.weight": (hp.dim,), "feed_forward.post_norm.weight": (hp.dim,),
        "attention.wq.weight": (q, hp.dim), "attention.wk.weight": (kv, hp.dim),
        "attention.wv.weight": (kv, hp.dim), "attention.wo.weight": (hp.dim, q),
        "feed_forward.w1.weight": (hp.hidden_dim, hp.dim), "feed_forward.w3.weight": (hp.hidden_dim, hp.dim),
        "feed_forward.w2.weight": (hp.dim, hp.hidden_dim),
        "attention.wqkv.weight": (q + 2 * kv, hp.dim),
        "feed_forward.w13.weight": (2 * hp.hidden_dim, hp.dim),
    }[leaf]


def arrays(reader, hp: LlamaHParams, load=None) -> dict:
    """Dequantized float32 numpy arrays keyed like the llama example model, shapes checked
    against ``hp`` before any tensor is dequantized. ``load`` (default: ``dequantize``)
    reads one tensor instead: whatever it returns is split and reordered by rows like the
    arrays (it needs ``shape`` and numpy-style row indexing); None leaves the tensor out."""
    load = load or dequantize
    named = {}
    for t in reader.tensors:
        if t.name == "rope_freqs.weight":  # read by read_hparams
            continue
        if t.name in _LONGROPE_TENSORS and hp.rope_factors_short is not None:  # so are these
            continue
        key = parameter_name(t.name, hp)
        if key.startswith("layers.") and int(key.split(".")[1]) >= hp.n_layers:
            raise FormatError(f"GGUF tensor {t.name!r} is past block_count {hp.n_layers}", field=t.name)
        shape = tuple(int(d) for d in reversed(t.shape))
        if key.split(".", 2)[-1] in _FUSED_PARTS:
            _fused_rows(t.name, key.split(".", 2)[-1], shape, hp)
        if shape != expected_shape(key, hp):
            raise FormatError(f"GGUF tensor has shape {list(shape)}, the model needs "
                              f"{list(expected_shape(key, hp))}", field=t.name)
        named[key] = t
    # the first missing one only: a lazy walk, stopped within len(named) + 1 steps (a
    # block_count of 2^31 must not build a list of 2^31 names)
    missing = next((g for g, k in _required(hp) if k not in named), None)
    if missing:
        raise FormatError(f"GGUF tensor {missing!r} is missing", field=missing)
    out = {}
    for key, t in named.items():
        w = load(t)
        if w is None:
            continue
        out.update(split_fused(t.name, key, w, hp) if key.split(".", 2)[-1] in _FUSED_PARTS
                   else {key: w})
    if hp.rope_halves:  # rotate-half q/k rows -> the interleaved pairs the model's RoPE takes
        for key in out:
            leaf = key.split(".", 2)[-1]
            if leaf in ("attention.wq.weight", "attention.wq.bias"):
                out[key] = gguf_arch.interleave_rows(out[key], hp.n_heads)
            elif leaf in ("attention.wk.weight", "attention.wk.bias"):
                out[key] = gguf_arch.interleave_rows(out[key], hp.n_kv_heads)
            elif leaf in ("attention.q_norm_fn.weight", "attention.k_norm_fn.weight"):
                out[key] = gguf_arch.interleave_rows(out[key], 1)
    return out


def _required(hp: LlamaHParams):
    """(GGUF tensor name, model key) of every tensor the model of ``hp`` needs, lazily."""
    yield "token_embd.weight", "tok_embeddings.weight"
    yield "output_norm.weight", "norm.weight"
    if not hp.tied_output:
        yield "output.weight", "output.weight"
    blocks = _block_tensors(hp)
    block = [g for g in blocks if (hp.qk_norm or g not in _QK_NORMS)
             and (hp.gemma or g not in _POST_NORMS)]
    for i in range(hp.n_layers):
        for g in block:
            yield f"blk.{i}.{g}.weight", f"layers.{i}.{blocks[g]}.weight"
        for g in _BIASED if hp.qkv_bias else ():
            yield f"blk.{i}.{g}.bias", f"layers.{i}.{_BLOCK_TENSORS[g]}.bias"


def state_dict(reader, hp: LlamaHParams) -> dict:
    """Dequantized float32 torch tensors keyed like the llama example model."""
    import torch

    out = {key: torch.from_numpy(a) for key, a in arrays(reader, hp).items()}
    if hp.tied_output:
        out["output.weight"] = out["tok_embeddings.weight"]
    return out
