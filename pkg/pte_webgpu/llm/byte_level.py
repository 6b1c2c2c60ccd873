"""Byte-level BPE (GPT-2 style: GPT-2, SmolLM, Llama 3, Qwen 2).

Text is split by the model's pre-tokenizer regex, each piece's UTF-8 bytes are written in
GPT-2's printable byte alphabet (a space is ``Ġ``) and merged by rank. A byte the vocab
lacks is dropped before merging, as HF's BPE without an unknown token does. Decoding maps
each token's characters back to bytes (a token with characters outside the alphabet, e.g.
a special token, is its own UTF-8) and replaces invalid UTF-8 like HF (``errors="replace"``).
"""

from __future__ import annotations

import unicodedata

from . import bpe, pre_tokenize

_CACHE_LIMIT = 100_000


def byte_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character map (printable Latin-1 bytes map to themselves)."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in keep}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


class ByteLevelBPE:
    """Encodes text chunks (no special tokens in them) to ids; ids to bytes."""

    def __init__(self, vocab: list[str], ids: dict[str, int], merges: list[str], pre: str, *,
                 normalizer: str | None, ignore_merges: bool):
        self.vocab, self.ids = vocab, ids
        self.ranks = bpe.merge_ranks(merges, ids)
        self.split = pre_tokenize.Splitter(pre_tokenize.family(pre))
        self.normalizer = normalizer
        self.ignore_merges = ignore_merges
        self.byte_char = byte_to_unicode()
        self.char_byte = {c: b for b, c in self.byte_char.items()}
        self._cache: dict[str, list[int]] = {}

    def encode_chunk(self, chunk: str, first: bool) -> list[int]:
        if self.normalizer:
            chunk = unicodedata.normalize(self.normalizer, chunk)
        out: list[int] = []
        for piece in self.split(chunk):
            out.extend(self._piece(piece))
        return out

    def _piece(self, piece: str) -> list[int]:
        cached = self._cache.get(piece)
        if cached is not None:
            return cached
        chars = "".join(self.byte_char[b] for b in piece.encode("utf-8"))
        whole = self.ids.get(chars) if self.ignore_merges else None
        if whole is not None:
            ids = [whole]
        else:
            symbols = [c for c in chars if c in self.ids]
            ids = [self.ids[s] for s in bpe.merge(symbols, self.ranks)]
        if len(self._cache) < _CACHE_LIMIT:
            self._cache[piece] = ids
        return ids

    def token_bytes(self, token_id: int) -> bytes:
        token = self.vocab[token_id]
        char_byte = self.char_byte
        try:
            return bytes(char_byte[c] for c in token)
        except KeyError:  # not in the byte alphabet (a special token): its own text
            return token.encode("utf-8")

    def decode(self, ids: list[int]) -> str:
        return b"".join(self.token_bytes(i) for i in ids).decode("utf-8", errors="replace")

    def stream_piece(self, token_id: int):
        """(bytes, None): the stream decoder joins bytes into characters."""
        return self.token_bytes(token_id), None
