"""Write the tokenizer side file (``NAME.tokenizer.json``) from a GGUF's metadata.

Format ``pte-webgpu-tokenizer/1``, read by ``pte_webgpu.llm.tokenizer``:
``model`` ("byte_level_bpe"), ``pre_tokenizer`` (GGUF ``tokenizer.ggml.pre``), ``vocab``
(token strings in id order, byte-level alphabet), ``merges`` ("left right", by rank),
``special_tokens`` (control tokens, matched whole in text), ``added_tokens`` (user-defined,
matched whole), ``bos_id``/``eos_id``/``unk_id``/``pad_id``, ``add_bos``/``add_eos`` and
``chat_template`` (the template text as the GGUF stores it).
"""

from __future__ import annotations

from ..errors import UnsupportedError
from .gguf_llama import field, listing

FORMAT = "pte-webgpu-tokenizer/1"
_CONTROL, _USER_DEFINED = 3, 4  # llama.cpp token types


def tokenizer_dict(reader) -> dict:
    model = field(reader, "tokenizer.ggml.model")
    if model != "gpt2":
        raise UnsupportedError(
            f"tokenizer.ggml.model {model!r}: only byte-level BPE ('gpt2') tokenizers are supported"
        )
    tokens = listing(reader, "tokenizer.ggml.tokens", str)
    types = listing(reader, "tokenizer.ggml.token_type", int, [1] * len(tokens))
    merges = listing(reader, "tokenizer.ggml.merges", str)

    def opt(key):
        value = field(reader, f"tokenizer.ggml.{key}", None, required=False)
        return None if value is None else value.item() if hasattr(value, "item") else value

    return {
        "format": FORMAT,
        "model": "byte_level_bpe",
        "pre_tokenizer": str(field(reader, "tokenizer.ggml.pre", "default", required=False)),
        "vocab": tokens,
        "merges": merges,
        "special_tokens": {t: i for i, (t, k) in enumerate(zip(tokens, types)) if k == _CONTROL},
        "added_tokens": {t: i for i, (t, k) in enumerate(zip(tokens, types)) if k == _USER_DEFINED},
        "bos_id": opt("bos_token_id"),
        "eos_id": opt("eos_token_id"),
        "unk_id": opt("unknown_token_id"),
        "pad_id": opt("padding_token_id"),
        "add_bos": bool(opt("add_bos_token") or False),
        "add_eos": bool(opt("add_eos_token") or False),
        "chat_template": field(reader, "tokenizer.chat_template", "", required=False),
        "source": str(field(reader, "general.name", "", required=False)),
    }


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
