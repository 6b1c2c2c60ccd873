"""The pure-Python tokenizer runs in Pyodide and gives the ids it gives in CPython.

CPython's ids are checked against HF tokenizers in tests/unit/test_llm_tokenizer.py.
Needs build/llm/smollm2-135m-instruct.tokenizer.json (`make llm-tokenizer`).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pte_webgpu.llm import ChatTemplate, Tokenizer

pytestmark = pytest.mark.browser

TOKENIZER_JSON = Path(__file__).resolve().parents[2] / "build/llm/smollm2-135m-instruct.tokenizer.json"
if not TOKENIZER_JSON.exists():
    pytest.skip(f"{TOKENIZER_JSON} missing: run `make llm-tokenizer`", allow_module_level=True)

def corpus() -> list[str]:
    source = (Path(__file__).resolve().parents[1] / "unit" / "test_llm_tokenizer.py").read_text()
    start = source.index("HAND_CORPUS = [")
    namespace: dict = {}
    exec(source[start:source.index("\n]\n", start) + 3], namespace)  # the hand-written corpus only
    return namespace["HAND_CORPUS"]


def test_tokenizer_in_pyodide_matches_cpython(browser_session):
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
        f"chat = ChatTemplate.from_template(tok.chat_template).render(json.loads({json.dumps(messages)!r}))\n"
        "{'ids': ids, 'decoded': decoded, 'chat': chat, 'load_s': t1 - t0, 'encode_s': t2 - t1}"
    )
    print(f"Pyodide: tokenizer load {got['load_s']:.2f} s, corpus encode {got['encode_s']:.3f} s")
    assert got["ids"] == [host.encode(t) for t in texts]
    assert got["decoded"] == [host.decode(host.encode(t)) for t in texts]
    assert got["chat"] == ChatTemplate.from_template(host.chat_template).render(messages)
