"""Byte-level BPE tokenizer in pure Python (stdlib only: runs in Pyodide).

Reads the ``NAME.tokenizer.json`` written by ``pte_webgpu.export.tokenizer_json`` (vocab,
merges, special tokens, chat template from a GGUF). Encoding is what HF ``tokenizers`` does
for these models: special tokens are cut out of the text whole, the rest is split by the
model's pre-tokenizer, each piece is mapped byte by byte onto GPT-2's printable alphabet and
merged by rank. Decoding maps tokens back to bytes; ``StreamDecoder`` emits text only once
its UTF-8 is complete.
"""

from __future__ import annotations

import codecs
import json
import re
import unicodedata

from ..errors import FormatError, InputError, UnsupportedError

FORMAT = "pte-webgpu-tokenizer/1"

# llama.cpp's tokenizer.ggml.pre names, grouped by the split they mean:
# GPT-2's regex alone, or every number character cut out on its own first (HF's
# Digits(individual_digits=True) before ByteLevel; llama.cpp's "\p{N}" pass).
GPT2_PRE = frozenset({"gpt2", "mpt", "olmo", "jais"})
DIGITS_THEN_GPT2_PRE = frozenset(
    {"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva"}
)
SUPPORTED_PRE = GPT2_PRE | DIGITS_THEN_GPT2_PRE

# Unicode White_Space (what \s means in the Rust/Oniguruma regexes the reference uses;
# Python's \s also takes U+001C..U+001F, so it is spelled out).
_WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Planes 4..16 hold no letters or numbers; scanning stops here.
_SCAN_END = 0x40000


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


def _class_bodies(majors: str) -> dict[str, str]:
    """Regex character-class bodies, one per major Unicode category in ``majors`` (one scan)."""
    parts: dict[str, list[str]] = {m: [] for m in majors}
    run_major, run_start = None, 0
    for cp in range(_SCAN_END + 1):
        major = unicodedata.category(chr(cp))[0] if cp < _SCAN_END else None
        if major != run_major:
            if run_major in parts:
                lo, hi = re.escape(chr(run_start)), re.escape(chr(cp - 1))
                parts[run_major].append(lo if run_start == cp - 1 else f"{lo}-{hi}")
            run_major, run_start = major, cp
    return {m: "".join(p) for m, p in parts.items()}


_CLASSES: dict[str, str] = {}


def _classes() -> tuple[str, str]:
    """(letters, numbers): \\p{L} and \\p{N}, which Python's re lacks; built once."""
    if not _CLASSES:
        _CLASSES.update(_class_bodies("LN"))
    return _CLASSES["L"], _CLASSES["N"]


def gpt2_split_regex() -> re.Pattern:
    """GPT-2's pre-tokenizer regex with \\p{L}, \\p{N} and \\s as explicit classes."""
    L, N = _classes()
    S = _WHITE_SPACE
    return re.compile(
        rf"'s|'t|'re|'ve|'m|'ll|'d| ?[{L}]+| ?[{N}]+| ?[^{S}{L}{N}]+|[{S}]+(?![^{S}])|[{S}]+"
    )


class Tokenizer:
    """Byte-level BPE: ``encode(text) -> ids``, ``decode(ids) -> text``."""

    def __init__(self, spec: dict):
        if not isinstance(spec, dict) or spec.get("format") != FORMAT:
            raise FormatError(f"not a {FORMAT} tokenizer description", field="format")
        if spec.get("model") != "byte_level_bpe":
            raise UnsupportedError(f"tokenizer model {spec.get('model')!r}: only byte_level_bpe is supported")
        pre = spec.get("pre_tokenizer")
        if pre not in SUPPORTED_PRE:
            raise UnsupportedError(
                f"pre-tokenizer {pre!r} is not supported (supported: {', '.join(sorted(SUPPORTED_PRE))})"
            )
        vocab = spec.get("vocab")
        merges = spec.get("merges")
        if not isinstance(vocab, list) or not isinstance(merges, list):
            raise FormatError("tokenizer needs a 'vocab' list and a 'merges' list", field="vocab")
        self.pre_tokenizer = pre
        self.vocab: list[str] = vocab
        self.ids = {tok: i for i, tok in enumerate(vocab)}
        self.ranks: dict[tuple[str, str], int] = {}
        for rank, merge in enumerate(merges):
            left, sep, right = merge.partition(" ")
            if not sep:
                raise FormatError(f"merge {rank} {merge!r} is not 'left right'", field=f"merges[{rank}]")
            self.ranks.setdefault((left, right), rank)
        self.special = dict(spec.get("special_tokens") or {})
        self.added = dict(spec.get("added_tokens") or {})
        for tok, i in {**self.special, **self.added}.items():
            if not (isinstance(i, int) and 0 <= i < len(vocab)):
                raise FormatError(f"token {tok!r} has id {i!r} outside the vocab", field="special_tokens")
        self.bos_id = spec.get("bos_id")
        self.eos_id = spec.get("eos_id")
        self.unk_id = spec.get("unk_id")
        self.add_bos = bool(spec.get("add_bos"))
        self.add_eos = bool(spec.get("add_eos"))
        self.chat_template = spec.get("chat_template") or ""
        self._whole_text = {i: t for t, i in {**self.special, **self.added}.items()}
        self._special_ids = frozenset(self.special.values())
        whole = sorted({**self.special, **self.added}, key=len, reverse=True)  # longest wins
        self._whole_re = re.compile("(" + "|".join(map(re.escape, whole)) + ")") if whole else None
        self._split_re = gpt2_split_regex()
        self._digit_re = re.compile(f"([{_classes()[1]}])")
        self._byte_char = byte_to_unicode()
        self._char_byte = {c: b for b, c in self._byte_char.items()}
        self._cache: dict[str, list[int]] = {}

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

    # -- encoding --------------------------------------------------------------------

    def encode(self, text: str, *, add_special: bool = False, parse_special: bool = True) -> list[int]:
        """Token ids of ``text``. ``parse_special``: special tokens written in the text
        become their ids (HF's default); ``add_special``: BOS/EOS as the model asks."""
        if not isinstance(text, str):
            raise InputError(f"encode takes str, not {type(text).__name__}")
        ids: list[int] = []
        if add_special and self.add_bos and self.bos_id is not None:
            ids.append(self.bos_id)
        chunks = self._whole_re.split(text) if (parse_special and self._whole_re) else [text]
        for n, chunk in enumerate(chunks):
            if n % 2:  # odd chunks are the matched special/added tokens
                ids.append(self.special.get(chunk, self.added.get(chunk)))
            elif chunk:
                for piece in self.pre_tokenize(chunk):
                    ids.extend(self._bpe(piece))
        if add_special and self.add_eos and self.eos_id is not None:
            ids.append(self.eos_id)
        return ids

    def pre_tokenize(self, text: str) -> list[str]:
        """The pieces BPE runs on, as text."""
        parts = self._digit_re.split(text) if self.pre_tokenizer in DIGITS_THEN_GPT2_PRE else [text]
        pieces = []
        for n, part in enumerate(parts):
            if n % 2:  # a single number character, its own piece
                pieces.append(part)
            elif part:
                pieces.extend(self._split_re.findall(part))
        return pieces

    def _bpe(self, piece: str) -> list[int]:
        cached = self._cache.get(piece)
        if cached is not None:
            return cached
        symbols = [self._byte_char[b] for b in piece.encode("utf-8")]
        ranks = self.ranks
        while len(symbols) > 1:
            best, best_rank = None, None
            for i in range(len(symbols) - 1):
                r = ranks.get((symbols[i], symbols[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            left, right = symbols[best], symbols[best + 1]
            merged, i = [], 0
            while i < len(symbols):  # every occurrence of the pair, left to right
                if i + 1 < len(symbols) and symbols[i] == left and symbols[i + 1] == right:
                    merged.append(left + right)
                    i += 2
                else:
                    merged.append(symbols[i])
                    i += 1
            symbols = merged
        # A symbol the vocab lacks (a byte never seen in training) is dropped, as HF
        # tokenizers' BPE without an unknown token and llama.cpp both do.
        ids = [self.ids[s] for s in symbols if s in self.ids]
        if len(self._cache) < 100_000:
            self._cache[piece] = ids
        return ids

    # -- decoding --------------------------------------------------------------------

    def token_bytes(self, token_id: int) -> bytes:
        """The bytes one token stands for (special tokens: their text in UTF-8)."""
        if not (isinstance(token_id, int) and 0 <= token_id < len(self.vocab)):
            raise InputError(f"token id {token_id!r} is outside the vocab (size {len(self.vocab)})")
        whole = self._whole_text.get(token_id)
        if whole is not None:
            return whole.encode("utf-8")
        char_byte = self._char_byte
        try:
            return bytes(char_byte[c] for c in self.vocab[token_id])
        except KeyError:  # not in the byte alphabet: a mislabelled special token
            return self.vocab[token_id].encode("utf-8")

    def is_special(self, token_id: int) -> bool:
        return token_id in self._special_ids

    def decode(self, ids, *, skip_special: bool = False) -> str:
        data = b"".join(
            self.token_bytes(i) for i in ids if not (skip_special and i in self._special_ids)
        )
        return data.decode("utf-8", errors="replace")

    def stream_decoder(self, *, skip_special: bool = False) -> "StreamDecoder":
        return StreamDecoder(self, skip_special=skip_special)


class StreamDecoder:
    """Turns ids into text as they come; holds back a UTF-8 sequence until it is complete."""

    def __init__(self, tokenizer: Tokenizer, *, skip_special: bool = False):
        self._tokenizer = tokenizer
        self._skip_special = skip_special
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def push(self, token_id: int) -> str:
        """Text completed by this token ('' while a character is still split)."""
        if self._skip_special and self._tokenizer.is_special(token_id):
            return ""
        return self._utf8.decode(self._tokenizer.token_bytes(token_id))

    def flush(self) -> str:
        """What is left at the end (an incomplete sequence becomes U+FFFD)."""
        return self._utf8.decode(b"", final=True)
