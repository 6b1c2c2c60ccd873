"""Chat templates rendered with jinja2 as transformers' apply_chat_template renders them.

reference.json (tests/fixtures/tokenizers, made by make_tokenizers.py in the export venv)
holds transformers' renderings of the templates in templates/*.jinja (written in the style
of Llama 3, Qwen 2.5, Llama 2, Phi-3, Gemma, and one using the environment's extras) and
of SmolLM2's real template from its GGUF, each on tokenizers loaded from the GGUF files,
multi-turn, with and without the generation prompt, and the errors its raise_exception gives.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

jinja2 = pytest.importorskip("jinja2")

from pte_webgpu.errors import ChatTemplateError, InputError, PteError  # noqa: E402
from pte_webgpu.llm import ChatTemplate, Tokenizer  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures" / "tokenizers"
REFERENCE = json.loads((FIXTURES / "reference.json").read_text(encoding="utf-8"))
CASES = REFERENCE["chats"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['template']}-{len(c['messages'])}"
                         f"{'-gen' if c['add_generation_prompt'] else ''}")
def test_rendering_equals_transformers(case):
    template = ChatTemplate(REFERENCE["templates"][case["template"]], name=case["template"],
                            special_tokens=case["special_tokens"])
    if "error" in case:  # the template's raise_exception: a typed error with its message
        message = case["error"].split(": ", 1)[1]
        with pytest.raises(ChatTemplateError, match=message.replace(".", r"\.")) as err:
            template.render(case["messages"], add_generation_prompt=case["add_generation_prompt"],
                            **case["kwargs"])
        assert err.value.template == case["template"] and err.value.line
        return
    assert template.render(case["messages"], add_generation_prompt=case["add_generation_prompt"],
                           **case["kwargs"]) == case["text"]


def test_every_family_and_both_generation_prompts_are_covered():
    covered = {(c["template"], c["add_generation_prompt"]) for c in CASES if "text" in c}
    families = {"llama3", "qwen2", "llama2", "phi3", "gemma", "extras"}
    assert {(f, g) for f in families for g in (True, False)} <= covered
    assert {c["template"] for c in CASES if "error" in c} == {"llama2", "gemma"}


def test_the_templates_come_from_the_gguf_files():
    gguf = pytest.importorskip("gguf")  # noqa: F841
    from pte_webgpu.export.gguf_llama import open_gguf
    from pte_webgpu.export.tokenizer_json import tokenizer_dict

    for case in CASES:
        if case["template"] in ("extras", "smollm2"):
            continue
        spec = tokenizer_dict(open_gguf(FIXTURES / case["gguf"]))
        assert spec["chat_template"] == REFERENCE["templates"][case["template"]]
        # the template variables the tokenizer gives are transformers' special tokens map
        tok = Tokenizer(spec)
        ours = ChatTemplate.from_tokenizer(tok).special_tokens
        theirs = {k: v for k, v in case["special_tokens"].items() if k != "mask_token"}
        assert ours == theirs, case["gguf"]  # (Gemma's <mask> is transformers' own addition)


def test_strftime_now_and_variables():
    template = ChatTemplate(REFERENCE["templates"]["llama3"], special_tokens={"bos_token": "<s>"})
    messages = [{"role": "user", "content": "Hi"}]
    before = datetime.now().strftime("%d %b %Y")
    text = template.render(messages)
    assert f"Today Date: {before}" in text or datetime.now().strftime("%d %b %Y") in text
    assert "Today Date: 26 Jul 2024" in template.render(messages, date_string="26 Jul 2024")
    assert text.startswith("<s><|start_header_id|>system")


def test_errors_are_typed_and_name_the_template_and_line():
    with pytest.raises(ChatTemplateError, match=r"\(mine, line 2\): syntax error") as err:
        ChatTemplate("{% for m in messages %}\n{{ m['content'] }\n{% endfor %}", name="mine")
    assert err.value.line == 2 and "syntax" in err.value.problem
    with pytest.raises(ChatTemplateError, match="no chat template"):
        ChatTemplate("")
    hello = [{"role": "user", "content": "hi"}]
    with pytest.raises(ChatTemplateError, match="line 3"):
        ChatTemplate("a\nb\n{{ messages[0]['content'].nope() }}").render(hello)
    with pytest.raises(ChatTemplateError, match="refuses the conversation: no tools"):
        ChatTemplate("{{ raise_exception('no tools') }}").render(hello)
    with pytest.raises(InputError):
        ChatTemplate("x").render([])
    with pytest.raises(InputError):
        ChatTemplate("x").render(["not a dict"])
    with pytest.raises(InputError):
        ChatTemplate("x").render([{"role": "user", "content": object()}])
    assert issubclass(ChatTemplateError, PteError)


def test_the_sandbox_holds():
    hello = [{"role": "user", "content": "hi"}]
    # immutable: a template may not change its input
    with pytest.raises(ChatTemplateError, match="SecurityError"):
        ChatTemplate("{{ messages.append(1) }}").render(hello)
    # no way to Python internals: underscore attributes are undefined, namespaces refuse them
    assert ChatTemplate("{{ messages.__class__ }}|").render(hello) == "|"
    with pytest.raises(ChatTemplateError, match="unsafe"):
        ChatTemplate("{{ ''.__class__.__mro__ }}").render(hello)
    with pytest.raises(ChatTemplateError, match="underscore"):
        ChatTemplate("{% set ns = namespace(_x=1) %}").render(hello)
    with pytest.raises(ChatTemplateError, match="underscore"):
        ChatTemplate("{% set ns = namespace(a=1) %}{% set ns._x = 2 %}").render(hello)
    # what the caller passed is not touched, None values are dropped (as transformers does)
    messages = [{"role": "user", "content": "hi", "name": None}]
    assert ChatTemplate("{{ messages[0] | tojson }}").render(messages) == \
        '{"role": "user", "content": "hi"}'
    assert messages[0]["name"] is None


def test_tojson_does_not_escape_html_and_takes_options():
    out = ChatTemplate("{{ x | tojson }}|{{ x | tojson(indent=1, sort_keys=True) }}").render(
        [{"role": "user"}], x={"b": "<é>&", "a": [1]})
    assert out == '{"b": "<é>&", "a": [1]}|{\n "a": [\n  1\n ],\n "b": "<é>&"\n}'


def test_chatml_default_system_message_of_smollm2():
    if "smollm2" not in REFERENCE["templates"]:
        pytest.skip("reference.json was made without the SmolLM2 GGUF")
    text = ChatTemplate(REFERENCE["templates"]["smollm2"]).render([{"role": "user", "content": "Hi"}])
    assert text == ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
                    "Hugging Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")
