"""How byte-level BPE vocabularies split text before merging, by GGUF ``tokenizer.ggml.pre``.

Each name llama.cpp writes stands for one split regex of the model's own tokenizer:

- GPT-2: ``'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+``
- SmolLM / StarCoder: every number character cut out on its own first (HF
  ``Digits(individual_digits=True)``), then GPT-2's regex;
- Llama 3: ``(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}|
  ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`` (its tokenizer also skips
  the merges for a piece that is a token as a whole: ``ignore_merges``);
- Qwen 2: Llama 3's regex with single number characters (``\\p{N}``), after NFC.

The splits are "isolated" (every match is a piece, and so is any text between matches).
"""

from __future__ import annotations

import re

from ..errors import UnsupportedError
from .unicode_classes import WHITE_SPACE, letters_and_numbers

GPT2, DIGITS_GPT2, LLAMA3, QWEN2 = "gpt2", "digits+gpt2", "llama3", "qwen2"
# tokenizer.ggml.pre -> the split family
FAMILY = {
    **dict.fromkeys(["gpt2", "gpt-2", "mpt", "olmo", "jais"], GPT2),
    **dict.fromkeys(["smollm", "starcoder", "refact", "command-r", "codeshell", "exaone",
                     "minerva"], DIGITS_GPT2),
    **dict.fromkeys(["llama-bpe", "llama3", "llama-v3", "smaug-bpe", "dbrx", "falcon3",
                     "pixtral"], LLAMA3),
    **dict.fromkeys(["qwen2", "deepseek-r1-qwen", "megrez"], QWEN2),
}
# what the family's own tokenizer does besides splitting
NORMALIZER = {QWEN2: "NFC"}
IGNORE_MERGES = {LLAMA3}


def family(pre) -> str:
    """The split family of a ``tokenizer.ggml.pre`` name; UnsupportedError naming it."""
    found = FAMILY.get(pre) if isinstance(pre, str) else None
    if found is None:
        raise UnsupportedError(
            f"pre-tokenizer {pre!r} (tokenizer.ggml.pre) is not known; known: "
            f"{', '.join(sorted(FAMILY))}")
    return found


def split_regex(kind: str) -> re.Pattern:
    L, N = letters_and_numbers()
    S = WHITE_SPACE
    if kind in (GPT2, DIGITS_GPT2):
        return re.compile(rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{S}{L}{N}]+"
                          rf"|[{S}]+(?![^{S}])|[{S}]+")
    digits = "{1,3}" if kind == LLAMA3 else ""
    return re.compile(rf"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n{L}{N}]?[{L}]+|[{N}]{digits}"
                      rf"| ?[^{S}{L}{N}]+[\r\n]*|[{S}]*[\r\n]+|[{S}]+(?![^{S}])|[{S}]+")


class Splitter:
    """``splitter(text) -> pieces`` for one family."""

    def __init__(self, kind: str):
        self.kind = kind
        self._regex = split_regex(kind)
        self._digit = re.compile(f"([{letters_and_numbers()[1]}])") if kind == DIGITS_GPT2 \
            else None

    def __call__(self, text: str) -> list[str]:
        parts = self._digit.split(text) if self._digit else [text]
        pieces: list[str] = []
        for n, part in enumerate(parts):
            if n % 2:  # a number character cut out on its own
                pieces.append(part)
            elif part:
                pieces.extend(isolated(self._regex, part))
        return pieces


def isolated(regex: re.Pattern, text: str) -> list[str]:
    """Matches and the text between them, in order (HF's Split behavior "isolated")."""
    out, at = [], 0
    for m in regex.finditer(text):
        if m.start() > at:
            out.append(text[at:m.start()])
        if m.end() > m.start():
            out.append(m.group())
        at = m.end()
    if at < len(text):
        out.append(text[at:])
    return out
