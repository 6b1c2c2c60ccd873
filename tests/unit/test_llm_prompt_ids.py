"""LanguageModel's prompts and stops from the tokenizer (no program needed): a chat goes
through the GGUF's template and gets no second BOS; plain prompts get the model's BOS; the
end-of-turn token stops generation too."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("gguf")
pytest.importorskip("jinja2")

from pte_webgpu.errors import ChatTemplateError  # noqa: E402
from pte_webgpu.export.gguf_llama import open_gguf  # noqa: E402
from pte_webgpu.export.tokenizer_json import tokenizer_dict  # noqa: E402
from pte_webgpu.llm.generate import LanguageModel  # noqa: E402
from pte_webgpu.llm.tokenizer import Tokenizer  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "tokenizers"


def model(name: str, **changes) -> LanguageModel:
    tok = Tokenizer({**tokenizer_dict(open_gguf(FIXTURES / f"{name}.gguf")), **changes})
    return LanguageModel(None, tok, max_context_len=512, vocab_size=tok.vocab_size,
                         prefill_chunk=64)


def test_a_chat_has_one_bos_written_by_its_template():
    lm = model("llama3-bpe")
    tok = lm.tokenizer
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    ids = lm.prompt_ids(messages=messages)
    assert ids[0] == tok.bos_id and ids.count(tok.bos_id) == 1
    assert ids == tok.encode(lm.template.render(messages, add_generation_prompt=True))
    assert tok.decode(ids).endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    assert lm.prompt_ids("Hi")[0] == tok.bos_id  # a plain prompt: add_bos


def test_end_of_turn_stops_as_end_of_text():
    lm = model("llama3-bpe")
    assert lm.stop_ids == {lm.tokenizer.eos_id, lm.tokenizer.eot_id}
    assert lm.tokenizer.vocab[lm.tokenizer.eot_id] == "<|eot_id|>"
    assert model("qwen2-bpe").stop_ids == {model("qwen2-bpe").tokenizer.eos_id}


def test_a_broken_template_fails_only_chats():
    lm = model("gemma-spm", chat_template="{% if %}")
    assert lm.prompt_ids("plain text")[0] == lm.tokenizer.bos_id
    with pytest.raises(ChatTemplateError, match="syntax error"):
        lm.prompt_ids(messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(ChatTemplateError, match="refuses the conversation"):
        model("gemma-spm").prompt_ids(messages=[{"role": "assistant", "content": "first"}])
