"""Tokenizers of GGUF vocabularies in pure Python (stdlib only: runs in Pyodide).

Reads the ``NAME.tokenizer.json`` written by ``pte_webgpu.export.tokenizer_json``. Two
families, as HF ``tokenizers`` runs them (``byte_level.py``, ``sentencepiece.py``):
byte-level BPE (``model`` "byte_level_bpe": GPT-2, SmolLM, Llama 3, Qwen 2) and
SentencePiece-style BPE with byte fallback ("sentencepiece_bpe": Llama 2, Phi-3, Gemma).
Special and added tokens are cut out of the text whole first (the longest one where
several start at the same place); the chunks between them go to the family's encoder.
``StreamDecoder`` emits text only once its UTF-8 is complete.

The description (``pte-webgpu-tokenizer/1``): ``model``, ``vocab`` (token strings in id
order), ``merges`` ("left right", by rank; or ``scores`` to derive them from),
``special_tokens`` (matched whole, dropped by ``skip_special``) and ``added_tokens``
(matched whole, kept), ``bos_id``/``eos_id``/``eot_id``/``unk_id``/``pad_id``,
``add_bos``/``add_eos``, ``chat_template``; byte-level: ``pre_tokenizer`` (GGUF
``tokenizer.ggml.pre``), ``normalizer`` ("NFC" or null) and ``ignore_merges`` (both default
to what the pre-tokenizer's model does); SentencePiece: ``prefix`` ("first", "every",
"none") and ``byte_fallback``.
"""

from __future__ import annotations

import codecs
import json
import re

from ..errors import FormatError, InputError, UnsupportedError
from . import bpe, pre_tokenize
from .byte_level import ByteLevelBPE, byte_to_unicode
from .sentencepiece import PREFIXES, SentencePieceBPE

FORMAT = "pte-webgpu-tokenizer/1"
MODELS = ("byte_level_bpe", "sentencepiece_bpe")
__all__ = ["FORMAT", "MODELS", "StreamDecoder", "Tokenizer", "byte_to_unicode"]


def _token_ids(spec: dict, key: str, size: int) -> dict[str, int]:
    found = spec.get(key) or {}
    if not isinstance(found, dict):
        raise FormatError(f"{key} must be an object of token: id", field=key)
    for tok, i in found.items():
        if not (type(i) is int and 0 <= i < size):
            raise FormatError(f"token {tok!r} has id {i!r} outside the vocab", field=key)
    return dict(found)


def _optional_id(spec: dict, key: str, size: int) -> int | None:
    value = spec.get(key)
    if value is not None and not (type(value) is int and 0 <= value < size):
        raise FormatError(f"{key} {value!r} is not a token id of the vocab (size {size})",
                          field=key)
    return value


class Tokenizer:
    """``encode(text) -> ids``, ``decode(ids) -> text``."""

    def __init__(self, spec: dict):
        if not isinstance(spec, dict) or spec.get("format") != FORMAT:
            raise FormatError(f"not a {FORMAT} tokenizer description", field="format")
        model = spec.get("model")
        if model not in MODELS:
            raise UnsupportedError(f"tokenizer model {model!r} is not supported "
                                   f"(supported: {', '.join(MODELS)})")
        vocab = spec.get("vocab")
        if not isinstance(vocab, list) or not all(isinstance(t, str) for t in vocab):
            raise FormatError("tokenizer needs a 'vocab' list of strings", field="vocab")
        self.model = model
        self.vocab: list[str] = vocab
        self.ids = {tok: i for i, tok in enumerate(vocab)}  # a repeated token: its last id
        merges = self._merges(spec)
        size = len(vocab)
        self.special = _token_ids(spec, "special_tokens", size)
        self.added = _token_ids(spec, "added_tokens", size)
        self.bos_id = _optional_id(spec, "bos_id", size)
        self.eos_id = _optional_id(spec, "eos_id", size)
        self.eot_id = _optional_id(spec, "eot_id", size)
        self.unk_id = _optional_id(spec, "unk_id", size)
        self.pad_id = _optional_id(spec, "pad_id", size)
        self.add_bos = bool(spec.get("add_bos"))
        self.add_eos = bool(spec.get("add_eos"))
        self.chat_template = spec.get("chat_template") or ""
        self.source = str(spec.get("source") or "")
        self.pre_tokenizer = spec.get("pre_tokenizer")
        if model == "byte_level_bpe":
            kind = pre_tokenize.family(self.pre_tokenizer)
            normalizer = spec.get("normalizer", pre_tokenize.NORMALIZER.get(kind))
            if normalizer not in (None, "NFC"):
                raise UnsupportedError(f"normalizer {normalizer!r} is not supported (NFC or none)")
            self._model = ByteLevelBPE(
                vocab, self.ids, merges, self.pre_tokenizer, normalizer=normalizer,
                ignore_merges=bool(spec.get("ignore_merges", kind in pre_tokenize.IGNORE_MERGES)))
        else:
            prefix = spec.get("prefix", "first")
            if prefix not in PREFIXES:
                raise UnsupportedError(f"prefix {prefix!r} is not one of {', '.join(PREFIXES)}")
            self._model = SentencePieceBPE(vocab, self.ids, merges, prefix=prefix,
                                           byte_fallback=bool(spec.get("byte_fallback", True)),
                                           unk_id=self.unk_id)
        whole = {**self.special, **self.added}
        self._whole = whole
        self._special_ids = frozenset(self.special.values())
        longest_first = sorted(whole, key=len, reverse=True)
        self._whole_re = re.compile("|".join(map(re.escape, longest_first))) if whole else None

    @staticmethod
    def _merges(spec: dict) -> list[str]:
        merges = spec.get("merges")
        if merges is None and spec.get("scores") is not None:
            scores = spec["scores"]
            if not isinstance(scores, list) or not all(isinstance(s, (int, float)) for s in scores):
                raise FormatError("scores must be a list of numbers", field="scores")
            return bpe.merges_from_scores(spec["vocab"], scores)
        if not isinstance(merges, list):
            raise FormatError("tokenizer needs a 'merges' list (or 'scores')", field="merges")
        return merges

    @classmethod
    def from_file(cls, path) -> "Tokenizer":
        with open(path, encoding="utf-8") as f:
            return cls.from_json(f.read())

    @classmethod
    def from_json(cls, text: str) -> "Tokenizer":
        try:
            spec = json.loads(text)
        except ValueError as exc:
            raise FormatError(f"tokenizer JSON does not parse: {exc}") from exc
        return cls(spec)

    @property
    def vocab_size(self) -> int:
        return len(self.vocab)

    def token_text(self, name: str) -> str | None:
        """The text of the bos/eos/unk/pad token (for chat templates), or None."""
        token_id = getattr(self, f"{name}_id")
        return None if token_id is None else self.vocab[token_id]

    # -- encoding --------------------------------------------------------------------

    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = True) -> list[int]:
        """Token ids of ``text``. ``parse_special``: special and added tokens written in the
        text become their ids (HF's default); ``add_special``: BOS/EOS as the model asks."""
        if not isinstance(text, str):
            raise InputError(f"encode takes str, not {type(text).__name__}")
        ids: list[int] = []
        if add_special and self.add_bos and self.bos_id is not None:
            ids.append(self.bos_id)
        at = 0
        if parse_special and self._whole_re is not None:
            for m in self._whole_re.finditer(text):
                if m.start() > at:
                    ids.extend(self._model.encode_chunk(text[at:m.start()], at == 0))
                ids.append(self._whole[m.group()])
                at = m.end()
        if at < len(text):
            ids.extend(self._model.encode_chunk(text[at:], at == 0))
        if add_special and self.add_eos and self.eos_id is not None:
            ids.append(self.eos_id)
        return ids

    def pre_tokenize(self, text: str) -> list[str]:
        """The pieces byte-level BPE merges within, as text."""
        if self.model != "byte_level_bpe":
            raise UnsupportedError("pre_tokenize: a SentencePiece chunk is one piece")
        return self._model.split(text)

    # -- decoding --------------------------------------------------------------------

    def _check(self, token_id) -> None:
        if not (type(token_id) is int and 0 <= token_id < len(self.vocab)):
            raise InputError(f"token id {token_id!r} is outside the vocab (size {len(self.vocab)})")

    def is_special(self, token_id: int) -> bool:
        return token_id in self._special_ids

    def decode(self, ids, *, skip_special: bool = False) -> str:
        ids = list(ids)
        for i in ids:
            self._check(i)
        if skip_special:
            ids = [i for i in ids if i not in self._special_ids]
        return self._model.decode(ids)

    def stream_decoder(self, *, skip_special: bool = False) -> "StreamDecoder":
        return StreamDecoder(self, skip_special=skip_special)


class StreamDecoder:
    """Turns ids into text as they come; holds back a UTF-8 sequence until it is complete.
    The pieces join into ``decode(ids)`` (where a SentencePiece run of byte tokens is
    invalid UTF-8, each maximal bad sequence is one U+FFFD here, one per byte there)."""

    def __init__(self, tokenizer: Tokenizer, *, skip_special: bool = False):
        self._tokenizer = tokenizer
        self._skip_special = skip_special
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        model = tokenizer._model
        self._strip = getattr(model, "strip_leading_space", False)  # once, at the start
        self._started = False

    def push(self, token_id: int) -> str:
        """Text completed by this token ('' while a character is still split)."""
        self._tokenizer._check(token_id)
        if self._skip_special and self._tokenizer.is_special(token_id):
            return ""
        data, text = self._tokenizer._model.stream_piece(token_id)
        out = self._utf8.decode(data) if data is not None else \
            self._utf8.decode(b"", final=True) + text
        return self._first(out)

    def flush(self) -> str:
        """What is left at the end (an incomplete sequence becomes U+FFFD)."""
        return self._first(self._utf8.decode(b"", final=True))

    def _first(self, out: str) -> str:
        if out and not self._started:
            self._started = True
            if self._strip and out.startswith(" "):
                out = out[1:]
        return out
