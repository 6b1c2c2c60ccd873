"""The pure-Python tokenizer against HF `tokenizers` on the real SmolLM2 vocabulary.

Needs build/llm/smollm2-135m-instruct.tokenizer.json (`make llm-tokenizer`, part of
`make llm`) and the `tokenizers` package (the `test` extra); skips without them.
The reference is built independently from the same vocab/merges with `tokenizers`'
own BPE model and the pre-tokenizer of SmolLM2's tokenizer.json (Digits(individual) then
ByteLevel), the split llama.cpp applies for tokenizer.ggml.pre = "smollm".
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from pte_webgpu.errors import FormatError, InputError, UnsupportedError
from pte_webgpu.llm.tokenizer import Tokenizer

TOKENIZER_JSON = Path(__file__).resolve().parents[2] / "build/llm/smollm2-135m-instruct.tokenizer.json"
tokenizers = pytest.importorskip("tokenizers")
if not TOKENIZER_JSON.exists():
    pytest.skip(f"{TOKENIZER_JSON} missing: run `make llm-tokenizer`", allow_module_level=True)


@pytest.fixture(scope="module")
def spec():
    return json.loads(TOKENIZER_JSON.read_text(encoding="utf-8"))


def reference(spec, digits: bool):
    from tokenizers import AddedToken, decoders, models, pre_tokenizers

    vocab = {t: i for i, t in enumerate(spec["vocab"])}
    merges = [tuple(m.split(" ", 1)) for m in spec["merges"]]
    hf = tokenizers.Tokenizer(models.BPE(vocab, merges))
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    hf.pre_tokenizer = (
        pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
        if digits else byte_level
    )
    hf.decoder = decoders.ByteLevel()
    hf.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in spec["special_tokens"]])
    return hf


@pytest.fixture(scope="module")
def ours(spec):
    return Tokenizer(spec)


@pytest.fixture(scope="module")
def hf(spec):
    return reference(spec, digits=True)


HAND_CORPUS = [
    "", " ", "  ", "\n", "\n\n\n", " \t \n ", "a", "Hello world!", "Hello  world", "trailing   ",
    "   leading", "tabs\tand\ttabs\t\t", "line\r\nbreaks\rmixed\n", "What is the capital of France?",
    "I'm sure you're right, we'll see; they've said it'd be OK. DON'T SHOUT'S 'quoted'",
    "12345 3.14159 1,000,000 -42 +7e-10 0x1F 2024-12-01 10:30",
    "١٢٣٤ ٥ ۶ ½ ¾ Ⅻ ⅷ ² ³ ① 五 十",  # Arabic-Indic, Nl/No numbers, CJK numerals (Lo)
    "café naïve résumé Zürich façade São Paulo Ελληνικά русский язык",
    "العربية עברית हिन्दी भाषा தமிழ் ภาษาไทย",  # RTL scripts, combining marks (Mn/Mc)
    "日本語のテキストです。中文文本，标点符号！한국어 텍스트",
    "emoji 👍 👍🏽 👨‍👩‍👧‍👦 🇫🇷🇯🇵 ❤️ 🤖🧠✨ 😀😃😄",
    "def f(x):\n    return x ** 2  # square\n\nclass A:\n\tpass\n",
    "if (a && b || !c) { x += 1; } else { y->z[0] = \"str\\n\"; }",
    "<html><body class=\"x\">Hi</body></html>  <!-- comment -->",
    "supercalifragilisticexpialidocious pneumonoultramicroscopicsilicovolcanoconiosis",
    "a" * 300, "ab" * 150 + " " + "xyz" * 100, "aGVsbG8gd29ybGQgdGhpcyBpcyBiYXNlNjQ=" * 4,
    "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n",
    "x<|im_end|>y<|endoftext|><|endoftext|>z", "<|im_start", "<|im_start|", "|im_end|>",
    "<repo_name>proj<file_sep>a.py<filename>b<gh_stars>10",
    "\x00\x01\x1c\x1d\x1e\x1f control \x7f",
    "nbsp\u00a0here ideographic\u3000space zwj\u200dzwnj\u200c zwsp\u200b rlm\u200f bom\ufeff",
    "\u2028line sep\u2029para sep\x85nel",
    "mixed  \n  \n\t\nws   runs    everywhere\n\n  ",
    "...!!!???---___===+++***", "😀" * 20, "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ １２３",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕞𝕒𝕥𝕙 𝟙𝟚𝟛 𐍈 𠀀𠀁",  # astral letters and digits
]


def random_corpus(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = (
        list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        + list(" \t\n\r  '\".,;:!?-_()[]{}<>/\\|@#$%^&*+=~`")
        + list("éüñßøåçΩπλжщ中文日本語한국어ابت१२٣½Ⅻ👍🏽‍️🇫🇷\u00a0\u3000\u200b\u0301")
    )
    words = ["the", " the", "'s", "'ll", "<|im_start|>", "<|im_end|>", "   ", "\n\n", "1234", "don't"]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 40)):
            parts.append(rng.choice(words) if rng.random() < 0.2 else rng.choice(alphabet))
        out.append("".join(parts))
    return out


CORPUS = HAND_CORPUS + random_corpus(400, seed=9)


def test_encode_matches_tokenizers(ours, hf):
    for text in CORPUS:
        expected = hf.encode(text, add_special_tokens=False).ids
        assert ours.encode(text) == expected, text


def test_decode_matches_tokenizers_and_round_trips(ours, hf):
    for text in CORPUS:
        ids = hf.encode(text, add_special_tokens=False).ids
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False), text
        # The vocab lacks a few bytes (0x04, 0x1d, ...): both drop them, so those texts lose them.
        if all(ours._model.byte_char[b] in ours.ids for b in text.encode()):
            assert ours.decode(ids) == text
        assert ours.decode(ids, skip_special=True) == hf.decode(ids, skip_special_tokens=True), text


def test_decode_of_arbitrary_ids_matches(ours, hf):
    # Random ids split multi-byte characters; both must replace the same bytes with U+FFFD.
    rng = random.Random(1)
    for _ in range(300):
        ids = [rng.randrange(ours.vocab_size) for _ in range(rng.randint(1, 12))]
        assert ours.decode(ids) == hf.decode(ids, skip_special_tokens=False), ids


def test_gpt2_split_matches_byte_level_without_digits(spec):
    # The plain GPT-2 split (pre "gpt2"; also what transformers' GGUF loader builds for
    # "smollm"). This vocab has no multi-digit merges, so the ids agree with the digit split.
    ours = Tokenizer({**spec, "pre_tokenizer": "gpt2"})
    hf = reference(spec, digits=False)
    for text in CORPUS:
        assert ours.encode(text) == hf.encode(text, add_special_tokens=False).ids, text
    assert ours.pre_tokenize("v 123") == ["v", " 123"]
    assert Tokenizer(spec).pre_tokenize("v 123") == ["v", " ", "1", "2", "3"]


def test_stream_decoder_emits_only_complete_characters(ours):
    for text in HAND_CORPUS:
        ids = ours.encode(text)
        text = ours.decode(ids)  # without the bytes the vocab lacks
        stream = ours.stream_decoder()
        pieces = [stream.push(i) for i in ids] + [stream.flush()]
        assert "".join(pieces) == text
        assert all("\ufffd" not in p for p in pieces), text
    # a byte-level token that is half of a character gives nothing until the rest arrives
    first, second = ours.encode("é") if len(ours.encode("é")) == 2 else (ours.ids["Ã"], ours.ids["©"])
    stream = ours.stream_decoder()
    assert stream.push(first) == "" and stream.push(second) == "é"
    stream = ours.stream_decoder()
    assert stream.push(first) == "" and stream.flush() == "\ufffd"


def test_special_tokens_whole_or_literal(ours):
    assert ours.encode("<|im_start|>") == [ours.special["<|im_start|>"]]
    literal = ours.encode("<|im_start|>", parse_special=False)
    assert len(literal) > 1 and ours.decode(literal) == "<|im_start|>"
    assert ours.eos_id == 2 and ours.bos_id == 1 and not ours.add_bos


def test_bad_input_is_typed(spec, ours):
    with pytest.raises(InputError):
        ours.decode([ours.vocab_size])
    with pytest.raises(InputError):
        ours.encode(b"bytes")
    with pytest.raises(UnsupportedError, match="'deepseek-coder'"):
        Tokenizer({**spec, "pre_tokenizer": "deepseek-coder"})
    with pytest.raises(UnsupportedError, match="'unigram'"):
        Tokenizer({**spec, "model": "unigram"})
    with pytest.raises(FormatError):
        Tokenizer.from_json("{not json")
    with pytest.raises(FormatError):
        Tokenizer({**spec, "format": "other"})
