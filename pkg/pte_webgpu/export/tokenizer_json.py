"""Write the tokenizer side file (``NAME.tokenizer.json``) from a GGUF's metadata.

The format (``pte-webgpu-tokenizer/1``) is described in ``pte_webgpu.llm.tokenizer``.
From the GGUF: ``tokenizer.ggml.model`` picks the family, "gpt2" (byte-level BPE, split by
``tokenizer.ggml.pre``) or "llama" (SentencePiece-style BPE with byte fallback); tokens,
``token_type`` (control and unknown tokens are special: matched whole, skipped when
decoding with skip_special; user-defined ones are added tokens: matched whole, kept; the
bos/eos/unk/pad tokens are special too, as transformers makes them), merges (a
SentencePiece vocab without merges gets them from its scores, as transformers derives
them), the bos/eos/eot/unk/pad ids, add_bos/add_eos and the chat template.

As transformers loads these GGUFs, by architecture: Gemma's whitespace-only tokens, which
its files store with real spaces, are spelled with ``▁`` again and its merges follow the
token order (its scores do not); Phi-3 gets a dummy prefix on every chunk of text; other
SentencePiece vocabularies one on the text's first chunk, unless
``tokenizer.ggml.add_space_prefix`` is false (transformers ignores that key for Llama;
llama.cpp honours it, and so does this).
"""

from __future__ import annotations

from ..errors import FormatError, UnsupportedError
from ..llm import bpe, pre_tokenize
from ..llm.sentencepiece import SPACE
from ..llm.tokenizer import FORMAT
from .gguf_llama import field, listing

# llama.cpp token types
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
MODELS = {"gpt2": "byte_level_bpe", "llama": "sentencepiece_bpe"}
_ID_KEYS = {"bos_id": "bos_token_id", "eos_id": "eos_token_id", "eot_id": "eot_token_id",
            "unk_id": "unknown_token_id", "pad_id": "padding_token_id"}


def _token_id(reader, key: str, size: int):
    value = field(reader, f"tokenizer.ggml.{key}", None, required=False)
    if value is None:
        return None
    value = value.item() if hasattr(value, "item") else value
    if type(value) is not int or not 0 <= value < size:
        raise FormatError(f"GGUF metadata value {value!r:.40} is not a token id (vocab of {size})",
                          field=f"tokenizer.ggml.{key}")
    return value


def _flag(reader, key: str, default: bool) -> bool:
    value = field(reader, f"tokenizer.ggml.{key}", None, required=False)
    return default if value is None else bool(value)


def tokenizer_dict(reader) -> dict:
    ggml_model = field(reader, "tokenizer.ggml.model")
    if ggml_model not in MODELS:
        raise UnsupportedError(
            f"tokenizer.ggml.model {ggml_model!r:.40}: supported are 'gpt2' (byte-level BPE) and "
            f"'llama' (SentencePiece-style BPE)")
    arch = str(field(reader, "general.architecture", "", required=False))
    tokens = listing(reader, "tokenizer.ggml.tokens", str)
    types = listing(reader, "tokenizer.ggml.token_type", int, [NORMAL] * len(tokens))
    if len(types) != len(tokens):
        raise FormatError(f"{len(types)} token types for {len(tokens)} tokens",
                          field="tokenizer.ggml.token_type")
    ids = {name: _token_id(reader, key, len(tokens)) for name, key in _ID_KEYS.items()}
    spec = {"format": FORMAT, "model": MODELS[ggml_model]}
    if ggml_model == "gpt2":
        spec.update(_byte_level(reader))
    else:
        spec.update(_sentencepiece(reader, arch, tokens))
        tokens = spec.pop("vocab")
    named = {ids[k] for k in ("bos_id", "eos_id", "unk_id", "pad_id") if ids[k] is not None}
    special = {t: i for i, (t, k) in enumerate(zip(tokens, types))
               if k in (CONTROL, UNKNOWN) or i in named}
    added = {t: i for i, (t, k) in enumerate(zip(tokens, types))
             if k == USER_DEFINED and t not in special}
    return {
        **spec,
        "vocab": tokens,
        "special_tokens": special,
        "added_tokens": added,
        **ids,
        # llama.cpp and transformers add BOS to a SentencePiece vocab that does not say
        "add_bos": _flag(reader, "add_bos_token", ggml_model == "llama"),
        "add_eos": _flag(reader, "add_eos_token", False),
        "chat_template": field(reader, "tokenizer.chat_template", "", required=False),
        "source": str(field(reader, "general.name", "", required=False)),
        "architecture": arch,
    }


def _byte_level(reader) -> dict:
    pre = field(reader, "tokenizer.ggml.pre")  # the split: without it the ids are guesses
    kind = pre_tokenize.family(pre)
    return {"pre_tokenizer": pre, "normalizer": pre_tokenize.NORMALIZER.get(kind),
            "ignore_merges": kind in pre_tokenize.IGNORE_MERGES,
            "merges": listing(reader, "tokenizer.ggml.merges", str)}


def _sentencepiece(reader, arch: str, tokens: list[str]) -> dict:
    gemma = arch in ("gemma", "gemma2", "gemma3")
    merges = field(reader, "tokenizer.ggml.merges", None, required=False)
    if gemma:
        # (transformers' test, kept as it is: any whitespace-only token with a space in it)
        tokens = [SPACE * len(t) if " " in t and not t.strip() else t for t in tokens]
    if merges is not None:
        merges = listing(reader, "tokenizer.ggml.merges", str)
        source = "tokenizer.ggml.merges"
    elif gemma:
        merges = bpe.merges_from_scores(tokens, [-float(i) for i in range(len(tokens))])
        source = "token order"
    else:
        scores = listing(reader, "tokenizer.ggml.scores", float)
        merges = bpe.merges_from_scores(tokens, scores)
        source = "tokenizer.ggml.scores"
    if gemma:
        prefix = "none"
    elif arch == "phi3":
        prefix = "every"
    else:
        prefix = "first" if _flag(reader, "add_space_prefix", True) else "none"
    return {"vocab": tokens, "merges": merges, "merges_from": source, "prefix": prefix,
            "byte_fallback": True}


def main(argv=None) -> int:
    """python -m pte_webgpu.export.tokenizer_json MODEL.gguf OUT.tokenizer.json (needs only gguf)."""
    import json
    import sys

    from ..errors import PteError
    from .gguf_llama import open_gguf

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print(main.__doc__, file=sys.stderr)
        return 2
    try:
        spec = tokenizer_dict(open_gguf(args[0]))
    except PteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with open(args[1], "w", encoding="utf-8") as f:
        json.dump(spec, f, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
