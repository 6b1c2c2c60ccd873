"""One GGUF to one Vulkan-delegated .pte (what ``pte-webgpu convert`` runs).

Writes OUT.pte, OUT.tokenizer.json (the GGUF's tokenizer, for ``generate`` and the chat
page) and OUT.export.json (hyperparameters, sizes, times) beside it. ``progress`` gets a
line per step: reading the GGUF, building the model, tracing and lowering, writing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import resource
import time
import warnings
from pathlib import Path

from ..errors import PteError, UnsupportedError

DTYPES = ("fp32", "fp16", "q4")
REQUIRED_MODULES = ("torch", "executorch", "gguf")


def check_dependencies(modules=REQUIRED_MODULES) -> None:
    """An UnsupportedError naming the missing packages (the optional extra ``[export]``)."""
    import importlib.util

    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise UnsupportedError(
            f"convert needs {', '.join(missing)} (pip install 'pte-webgpu[export]': torch, "
            "executorch, gguf, transformers)")


@contextlib.contextmanager
def _quiet_toolchain():
    """ExecuTorch logs every partitioned op at INFO on the root logger and torch repeats
    FutureWarnings per layer; our progress lines say what matters."""
    logging.disable(logging.INFO)  # the builder sets the root level itself: disable outranks it
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        logging.disable(logging.NOTSET)


def _check_q4_shapes(hp) -> None:
    """ExecuTorch 1.5.1's Vulkan q4 linear pads out-channels to a multiple of 8 and then
    fails its own shape check (an opaque FusePatternsPass error); and groups of 32 need
    in-channels that are multiples of 32. Refuse such models up front, naming the size."""
    outs = {"vocab_size": hp.vocab_size, "embedding_length": hp.dim,
            "feed_forward_length": hp.hidden_dim, "q heads x head size": hp.n_heads * hp.head_dim,
            "kv heads x head size": hp.n_kv_heads * hp.head_dim}
    bad = [f"{k} {v}" for k, v in outs.items() if v % 8]
    bad += [f"{k} {v} (linear input, groups of 32)" for k, v in
            {"embedding_length": hp.dim, "feed_forward_length": hp.hidden_dim,
             "q heads x head size": hp.n_heads * hp.head_dim}.items() if v % 32]
    if bad:
        raise UnsupportedError(f"--dtype q4 needs linear sizes that are multiples of 8 (outputs) "
                               f"and 32 (inputs); this model has {', '.join(dict.fromkeys(bad))}")


def _longrope_note(hp, ctx: int) -> str:
    from .gguf_arch import longrope

    if hp.rope_factors_short is None:
        return ""
    which = "short" if longrope(hp, ctx)[0] is hp.rope_factors_short else "long"
    return (f", LongRoPE ({which} factors: context {ctx} vs original {hp.rope_original_context}; "
            f"attention factor {hp.rope_attn_factor:.4g})")


def stem_of(path: Path) -> str:
    return path.name[:-4] if path.name.endswith(".pte") else path.name


def convert(gguf_path: Path, out: Path, dtype: str = "fp32", max_seq_len: int = 1024,
            max_context_len: int | None = None, progress=lambda text: None) -> dict:
    from . import exact_q4, gguf_arch, gguf_llama, llama_pte, tokenizer_json

    if dtype not in DTYPES:
        raise PteError(f"dtype {dtype!r}: one of {', '.join(DTYPES)}")
    ctx = max_context_len or max_seq_len
    if max_seq_len < 2 or ctx < max_seq_len:
        raise PteError(f"need 2 <= max-seq-len ({max_seq_len}) <= max-context-len ({ctx})")
    start = time.monotonic()
    check_dependencies(("gguf",))
    progress(f"reading {gguf_path}")
    reader = gguf_llama.open_gguf(gguf_path)
    hp = gguf_llama.read_hparams(reader)
    progress(f"{hp.architecture} {hp.name!r}: {hp.n_layers} layers, width {hp.dim}, "
             f"{hp.n_heads} heads ({hp.n_kv_heads} KV) of {hp.head_dim}, vocab {hp.vocab_size}"
             f"{', untied lm head' if not hp.tied_output else ''}"
             f"{', q/k/v bias' if hp.qkv_bias else ''}{', q/k norm' if hp.qk_norm else ''}"
             f"{', rope_freqs scaling' if hp.rope_freq_factors else ''}"
             f"{', fused qkv and gate/up (split)' if hp.fused else ''}{_longrope_note(hp, ctx)}")
    gguf_arch.check_sliding_window(hp, ctx)  # before torch: a refusal needs only the GGUF
    if ctx > hp.context_length:
        progress(f"note: context {ctx} exceeds the model's trained {hp.context_length}")
    tok = tokenizer_json.tokenizer_dict(reader)
    if len(tok["vocab"]) != hp.vocab_size:
        raise PteError(f"tokenizer has {len(tok['vocab'])} tokens but the model's vocab is {hp.vocab_size}")
    if dtype == "q4":
        _check_q4_shapes(hp)
    check_dependencies()  # after the GGUF's checks, which need only gguf
    progress("dequantizing the weights")
    weights = gguf_llama.state_dict(reader, hp)
    quantize = "q4" if dtype == "q4" else None
    progress("building ExecuTorch's llama example model" + (" (quantizing to q4)" if quantize else ""))
    with _quiet_toolchain():
        exact = exact_q4.groups(reader, hp) if quantize else None
        if exact:
            progress(f"keeping the GGUF's 4-bit groups of {len(exact)} linears"
                     f" ({sum(g.offsets is not None for g in exact.values())} with Q4_1 offsets)")
        model = llama_pte.source_transformed(llama_pte.build_model(hp, weights, max_seq_len, ctx),
                                             quantize, exact)
    digest = llama_pte.weights_digest(model) if quantize else None
    progress("exporting, lowering with the Vulkan partitioner" + (" (force_fp16)" if dtype == "fp16" else ""))
    with _quiet_toolchain():
        (_, program), = llama_pte.lower(model, hp, max_seq_len, ctx, [dtype == "fp16"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(program.buffer)
    stem = stem_of(out)
    (out.parent / f"{stem}.tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False), encoding="utf-8")
    report = {
        "gguf": Path(gguf_path).name, "hparams": dataclasses.asdict(hp), "dtype": dtype,
        "max_seq_len": max_seq_len, "max_context_len": ctx,
        "programs": {dtype: {"file": out.name, "bytes": out.stat().st_size,
                             **({"quantize": quantize, "weights_sha256": digest} if quantize else {})}},
        "tokenizer": f"{stem}.tokenizer.json",
        "export_s": round(time.monotonic() - start, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }
    (out.parent / f"{stem}.export.json").write_text(json.dumps(report, indent=1))
    progress(f"wrote {out} ({out.stat().st_size / 1e6:.2f} MB), {stem}.tokenizer.json, {stem}.export.json")
    return report
