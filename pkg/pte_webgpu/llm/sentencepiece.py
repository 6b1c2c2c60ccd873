"""SentencePiece-style BPE with byte fallback (Llama 2, Phi-3, Gemma), as HF ``tokenizers``
runs these vocabularies.

A chunk of text (no special tokens in it) is one piece: spaces become ``▁`` and a dummy
prefix ``▁`` may go in front, by ``prefix``:

- ``"first"``: the chunk that starts the text, unless it already starts with ``▁``
  (HF ``Metaspace(prepend_scheme="first")``: Llama 2 as transformers loads its GGUF);
- ``"every"``: every chunk (a ``Prepend("▁")`` normalizer: Phi-3);
- ``"none"``: never (Gemma; a GGUF with ``tokenizer.ggml.add_space_prefix`` false).

Each character is its token, or else its UTF-8 bytes as ``<0xNN>`` tokens (byte
fallback, when all of them exist), or else the unknown token (a run of them fused into
one), or else dropped;
then merged by rank. Decoding: ``▁`` back to a space, runs of byte tokens joined into
UTF-8 (a run that is not valid UTF-8 becomes one U+FFFD per byte, as HF's ByteFallback
decoder does), and with a dummy prefix one leading space removed from the text.
"""

from __future__ import annotations

import re

from . import bpe

SPACE = "\u2581"  # ▁
PREFIXES = ("first", "every", "none")
_BYTE_TOKEN = re.compile(r"<0x([0-9A-Fa-f]{2})>")
_CACHE_LIMIT, _CACHE_LEN = 20_000, 64


def byte_value(token: str) -> int | None:
    """The byte a ``<0xNN>`` token stands for, else None."""
    m = _BYTE_TOKEN.fullmatch(token)
    return int(m.group(1), 16) if m else None


class SentencePieceBPE:
    def __init__(self, vocab: list[str], ids: dict[str, int], merges: list[str], *,
                 prefix: str, byte_fallback: bool, unk_id: int | None):
        self.vocab, self.ids = vocab, ids
        self.ranks = bpe.merge_ranks(merges, ids)
        self.prefix = prefix
        self.unk = vocab[unk_id] if unk_id is not None else None
        self.strip_leading_space = prefix != "none"
        self.byte_fallback = byte_fallback
        self._byte_of = {i: byte_value(t) for i, t in enumerate(vocab) if byte_value(t) is not None}
        self._cache: dict[tuple[str, bool], list[int]] = {}

    def encode_chunk(self, chunk: str, first: bool) -> list[int]:
        key = (chunk, first)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        text = chunk.replace(" ", SPACE)
        if self.prefix == "every" or (self.prefix == "first" and first
                                      and not text.startswith(SPACE)):
            text = SPACE + text
        ids = [self.ids[s] for s in bpe.merge(self._symbols(text), self.ranks)]
        if len(chunk) <= _CACHE_LEN and len(self._cache) < _CACHE_LIMIT:
            self._cache[key] = ids
        return ids

    def _symbols(self, text: str) -> list[str]:
        out: list[str] = []
        pending_unk = False  # an unknown token waiting (consecutive ones fuse into one)
        for c in text:
            if c in self.ids:
                if pending_unk:
                    out.append(self.unk)
                    pending_unk = False
                out.append(c)
                continue
            if self.byte_fallback:
                tokens = [f"<0x{b:02X}>" for b in c.encode("utf-8")]
                if all(t in self.ids for t in tokens):
                    out.extend(tokens)  # HF leaves a waiting unknown token waiting here
                    continue
            if self.unk is not None:
                pending_unk = True
        if pending_unk:
            out.append(self.unk)
        return out

    def decode(self, ids: list[int]) -> str:
        parts: list[str] = []
        run = bytearray()
        for i in ids:
            b = self._byte_of.get(i)
            if b is not None:
                run.append(b)
                continue
            if run:
                parts.append(_utf8_run(run))
                run = bytearray()
            parts.append(self.vocab[i].replace(SPACE, " "))
        if run:
            parts.append(_utf8_run(run))
        text = "".join(parts)
        if self.strip_leading_space and text.startswith(" "):
            text = text[1:]
        return text

    def stream_piece(self, token_id: int):
        """(bytes, None) for a byte token, else (None, its text)."""
        b = self._byte_of.get(token_id)
        if b is not None:
            return bytes([b]), None
        return None, self.vocab[token_id].replace(SPACE, " ")


def _utf8_run(run: bytearray) -> str:
    try:
        return run.decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd" * len(run)
