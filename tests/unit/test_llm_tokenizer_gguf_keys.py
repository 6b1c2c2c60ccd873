"""The GGUF tokenizer keys: what each one does in export.tokenizer_json, and typed errors
(naming the key) for files that lack one or hold what we do not run."""

from __future__ import annotations

import pytest

gguf = pytest.importorskip("gguf")

from pte_webgpu.errors import FormatError, UnsupportedError  # noqa: E402
from pte_webgpu.export.gguf_llama import open_gguf  # noqa: E402
from pte_webgpu.export.tokenizer_json import tokenizer_dict  # noqa: E402
from pte_webgpu.llm.tokenizer import Tokenizer  # noqa: E402

BYTES = [f"<0x{b:02X}>" for b in range(256)]
SPM_TOKENS = ["<unk>", "<s>", "</s>", *BYTES, "▁", "a", "b", "▁a", "ab", "▁ab", "  ", "▁b"]
SPM_TYPES = [2, 3, 3, *[6] * 256, *[1] * 8]


def write(path, arch="llama", **keys):
    """A GGUF holding only ``keys`` (GGUFWriter method name -> value; None: left out)."""
    w = gguf.GGUFWriter(str(path), arch)
    for method, value in keys.items():
        if value is not None:
            getattr(w, method)(value)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def byte_level(tmp_path, **changes):
    keys = dict(add_tokenizer_model="gpt2", add_tokenizer_pre="llama-bpe",
                add_token_list=["a", "b", "ab", "<|x|>"], add_token_types=[1, 1, 1, 3],
                add_token_merges=["a b"], add_bos_token_id=3)
    keys.update(changes)
    return tokenizer_dict(open_gguf(write(tmp_path / "t.gguf", **keys)))


def spm(tmp_path, arch="llama", **changes):
    keys = dict(add_tokenizer_model="llama", add_token_list=SPM_TOKENS, add_token_types=SPM_TYPES,
                add_token_scores=[0.0] * 259 + [0.0, 0.0, 0.0, -1.0, -2.0, -3.0, 0.0, -4.0],
                add_bos_token_id=1, add_eos_token_id=2, add_unk_token_id=0)
    keys.update(changes)
    return tokenizer_dict(open_gguf(write(tmp_path / "t.gguf", arch, **keys)))


@pytest.mark.parametrize("drop,error,key", [
    ("add_tokenizer_model", FormatError, "tokenizer.ggml.model"),
    ("add_tokenizer_pre", FormatError, "tokenizer.ggml.pre"),
    ("add_token_list", FormatError, "tokenizer.ggml.tokens"),
    ("add_token_merges", FormatError, "tokenizer.ggml.merges"),
])
def test_a_missing_byte_level_key_is_named(tmp_path, drop, error, key):
    with pytest.raises(error, match=key.replace(".", r"\.")):
        byte_level(tmp_path, **{drop: None})


def test_what_we_do_not_run_is_named(tmp_path):
    with pytest.raises(UnsupportedError, match="'deepseek-coder'"):
        byte_level(tmp_path, add_tokenizer_pre="deepseek-coder")
    with pytest.raises(UnsupportedError, match="'t5'"):
        byte_level(tmp_path, add_tokenizer_model="t5")
    with pytest.raises(FormatError, match="tokenizer.ggml.token_type"):
        byte_level(tmp_path, add_token_types=[1, 1])
    with pytest.raises(FormatError, match="tokenizer.ggml.bos_token_id"):
        byte_level(tmp_path, add_bos_token_id=9)
    with pytest.raises(FormatError, match="tokenizer.ggml.scores"):
        spm(tmp_path, add_token_scores=None)


def test_byte_level_keys(tmp_path):
    spec = byte_level(tmp_path)
    assert (spec["model"], spec["pre_tokenizer"], spec["ignore_merges"], spec["normalizer"]) == \
        ("byte_level_bpe", "llama-bpe", True, None)
    assert spec["special_tokens"] == {"<|x|>": 3} and spec["add_bos"] is False
    qwen = byte_level(tmp_path, add_tokenizer_pre="qwen2", add_add_bos_token=True)
    assert (qwen["normalizer"], qwen["ignore_merges"], qwen["add_bos"]) == ("NFC", False, True)
    tok = Tokenizer(spec)
    assert tok.encode("ab<|x|>ba") == [2, 3, 1, 0]


def test_sentencepiece_keys(tmp_path):
    spec = spm(tmp_path)
    assert (spec["model"], spec["prefix"], spec["add_bos"], spec["merges_from"]) == \
        ("sentencepiece_bpe", "first", True, "tokenizer.ggml.scores")
    # specials: control tokens and the unknown one; byte tokens are ordinary vocab
    assert spec["special_tokens"] == {"<unk>": 0, "<s>": 1, "</s>": 2}
    # merges by score: ▁a (-1) before ab (-2) before ▁ab (-3): "▁ab" from ▁a + b
    assert spec["merges"][:3] == ["▁ a", "a b", "▁a b"]
    tok = Tokenizer(spec)
    assert tok.encode("ab ab", add_special=True) == [1, tok.ids["▁ab"], tok.ids["▁ab"]]
    assert tok.decode(tok.encode("ab ab")) == "ab ab"
    assert spm(tmp_path, add_add_space_prefix=False)["prefix"] == "none"
    assert spm(tmp_path, add_add_bos_token=False)["add_bos"] is False
    assert spm(tmp_path, arch="phi3")["prefix"] == "every"
    given = spm(tmp_path, add_token_merges=["a b", "▁ ab"])
    assert (given["merges"], given["merges_from"]) == (["a b", "▁ ab"], "tokenizer.ggml.merges")


def test_gemma_respells_space_tokens_and_merges_by_token_order(tmp_path):
    spec = spm(tmp_path, arch="gemma2", add_add_space_prefix=False)
    assert spec["prefix"] == "none" and spec["merges_from"] == "token order"
    assert spec["vocab"][-2] == "▁▁"  # stored as two real spaces
    # by token order, whatever the scores say: "▁a" first ... "▁▁", then "▁b" last
    assert spec["merges"] == ["▁ a", "a b", "▁a b", "▁ ab", "▁ ▁", "▁ b"]


def test_a_spec_with_scores_derives_the_merges_itself(tmp_path):
    spec = spm(tmp_path)
    from_scores = Tokenizer({**{k: v for k, v in spec.items() if k != "merges"},
                             "scores": [0.0] * 259 + [0.0, 0.0, 0.0, -1.0, -2.0, -3.0, 0.0, -4.0]})
    assert from_scores._model.ranks == Tokenizer(spec)._model.ranks


def test_a_merge_outside_the_vocab_is_a_format_error(tmp_path):
    spec = byte_level(tmp_path)
    with pytest.raises(FormatError, match=r"merges\[1\]"):
        Tokenizer({**spec, "merges": ["a b", "b a"]})  # "ba" is not a token
    with pytest.raises(FormatError, match=r"merges\[0\]"):
        Tokenizer({**spec, "merges": ["ab"]})
