"""The pure-Python tokenizers and the Jinja chat templates run in Pyodide and give HF's ids
and transformers' renderings there too.

The fixtures' references (tests/fixtures/tokenizers/reference.json, from make_tokenizers.py)
are the ones CPython is checked against in tests/unit/test_llm_tokenizer_families.py and
test_llm_chat_template.py; the SmolLM2 part needs build/llm (`make llm-tokenizer`).
jinja2 and markupsafe come from the dist as pure-Python wheels (chromium/dist.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pte_webgpu.llm import ChatTemplate, Tokenizer

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
TOKENIZER_JSON = REPO / "build/llm/smollm2-135m-instruct.tokenizer.json"
FIXTURES = REPO / "tests" / "fixtures" / "tokenizers"
REFERENCE = json.loads((FIXTURES / "reference.json").read_text(encoding="utf-8"))


def corpus() -> list[str]:
    source = (Path(__file__).resolve().parents[1] / "unit" / "test_llm_tokenizer.py").read_text()
    start = source.index("HAND_CORPUS = [")
    namespace: dict = {}
    exec(source[start:source.index("\n]\n", start) + 3], namespace)  # the hand-written corpus only
    return namespace["HAND_CORPUS"]


def test_tokenizer_in_pyodide_matches_cpython(browser_session):
    if not TOKENIZER_JSON.exists():
        pytest.skip(f"{TOKENIZER_JSON} missing: run `make llm-tokenizer`")
    text = TOKENIZER_JSON.read_text(encoding="utf-8")
    texts = corpus()
    host = Tokenizer.from_json(text)
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    got = browser_session.run_python(
        "import json, time\n"
        "from pte_webgpu.llm import Tokenizer, ChatTemplate\n"
        "t0 = time.perf_counter()\n"
        f"tok = Tokenizer.from_json({text!r})\n"
        "t1 = time.perf_counter()\n"
        f"texts = json.loads({json.dumps(texts)!r})\n"
        "ids = [tok.encode(t) for t in texts]\n"
        "t2 = time.perf_counter()\n"
        "decoded = [tok.decode(i) for i in ids]\n"
        "t3 = time.perf_counter()\n"
        f"chat = ChatTemplate.from_tokenizer(tok).render(json.loads({json.dumps(messages)!r}))\n"
        "t4 = time.perf_counter()\n"
        "{'ids': ids, 'decoded': decoded, 'chat': chat, 'load_s': t1 - t0, 'encode_s': t2 - t1,"
        " 'tokens': sum(map(len, ids)), 'template_s': t4 - t3}"
    )
    print(f"Pyodide: tokenizer load {got['load_s']:.2f} s, corpus encode {got['encode_s']:.3f} s "
          f"({got['tokens']} tokens), first chat render (jinja2 import + compile) "
          f"{got['template_s']:.3f} s")
    assert got["ids"] == [host.encode(t) for t in texts]
    assert got["decoded"] == [host.decode(host.encode(t)) for t in texts]
    assert got["chat"] == ChatTemplate.from_tokenizer(host).render(messages)


def test_every_family_gives_the_reference_ids_in_pyodide(browser_session):
    pytest.importorskip("gguf")
    from pte_webgpu.export.gguf_llama import open_gguf
    from pte_webgpu.export.tokenizer_json import tokenizer_dict

    cases = {name: {"spec": tokenizer_dict(open_gguf(FIXTURES / entry["gguf"])),
                    "texts": entry["texts"], "ids": entry["trained"]["ids"]}
             for name, entry in REFERENCE["tokenizers"].items() if "trained" in entry}
    got = browser_session.run_python(
        "import json, time\n"
        "from pte_webgpu.llm import Tokenizer\n"
        f"cases = json.loads({json.dumps(cases, ensure_ascii=False)!r})\n"
        "out = {}\n"
        "for name, case in cases.items():\n"
        "    t0 = time.perf_counter()\n"
        "    tok = Tokenizer(case['spec'])\n"
        "    t1 = time.perf_counter()\n"
        "    ids = [tok.encode(t) for t in case['texts']]\n"
        "    t2 = time.perf_counter()\n"
        "    out[name] = {'ids': ids, 'decoded': [tok.decode(i) for i in case['ids']],\n"
        "                 'load_s': t1 - t0, 'encode_s': t2 - t1}\n"
        "out"
    )
    for name, case in cases.items():
        entry = REFERENCE["tokenizers"][name]
        print(f"Pyodide {name}: load {got[name]['load_s']:.2f} s, encode "
              f"{sum(map(len, case['ids']))} tokens in {got[name]['encode_s']:.3f} s")
        for i, text in enumerate(case["texts"]):
            assert got[name]["ids"][i] == case["ids"][i], (name, text)
            assert got[name]["decoded"][i] == entry["trained"]["decoded"][i], (name, text)


def test_chat_templates_render_as_transformers_in_pyodide(browser_session):
    cases = [{k: c.get(k) for k in ("template", "messages", "add_generation_prompt", "kwargs",
                                     "special_tokens")} for c in REFERENCE["chats"]]
    got = browser_session.run_python(
        "import json\n"
        "from pte_webgpu.llm import ChatTemplate\n"
        "from pte_webgpu.errors import ChatTemplateError\n"
        f"templates = json.loads({json.dumps(REFERENCE['templates'], ensure_ascii=False)!r})\n"
        f"cases = json.loads({json.dumps(cases, ensure_ascii=False)!r})\n"
        "out = []\n"
        "for c in cases:\n"
        "    t = ChatTemplate(templates[c['template']], name=c['template'],\n"
        "                     special_tokens=c['special_tokens'])\n"
        "    try:\n"
        "        out.append({'text': t.render(c['messages'],\n"
        "                    add_generation_prompt=c['add_generation_prompt'], **c['kwargs'])})\n"
        "    except ChatTemplateError as e:\n"
        "        out.append({'error': e.problem})\n"
        "out"
    )
    for case, result in zip(REFERENCE["chats"], got):
        if "error" in case:
            assert case["error"].split(": ", 1)[1] in result["error"], case["template"]
        else:
            assert result == {"text": case["text"]}, case["template"]
