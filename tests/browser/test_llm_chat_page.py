"""web/chat.html: the chat page downloads a model (into the Cache API), loads it in Pyodide
and streams the answer; it must equal the same generation run natively, and a reload must
take the model from the cache. Runs on a tiny llama decoder with a tiny tokenizer."""

import pytest

from tests.support.llm_models import tiny_case, write_tiny_tokenizer

pytestmark = pytest.mark.browser
NAME = "llama_dynamic_hfrope"
QUESTION = "Hi"


def _native_answer(tok_path) -> str:
    pytest.importorskip("wgpu")
    import pte_webgpu
    from pte_webgpu.llm.generate import LanguageModel

    from tests.support.gpu_thread import run_sync

    async def go():
        rt = await pte_webgpu.Runtime.create("native")
        try:
            lm = await LanguageModel.load(rt, tiny_case(NAME)["pte"].read_bytes(),
                                          tok_path.read_text())
            msgs = [{"role": "user", "content": QUESTION}]
            return "".join([p async for p in lm.generate(messages=msgs, max_new_tokens=256)])
        finally:
            rt.close()
    return run_sync(go())


def _chat_and_reload(browser_session, web_server, tok):
    """Ask once in a fresh page, then reload it: (answer, speed line, GETs of the model before
    and after the reload, the Cache API's URLs)."""
    page = browser_session.page.context.browser.new_page()  # its own context
    try:
        url = (f"{web_server.url}chat.html?model=/fixtures/decoders/{NAME}.pte"
               f"&tokenizer=/chat-test/{tok.name}")
        web_server.request_log.clear()  # bounded (1000 lines): count only this test's
        page.goto(url)
        page.wait_for_function("window.chatReady === true", timeout=180_000)
        page.fill("#input", QUESTION)
        page.click("#send")
        page.wait_for_selector(".assistant[data-done=true]", timeout=180_000)
        got = page.inner_text(".assistant")
        speed = page.inner_text("#speed")
        model_get = f"GET /fixtures/decoders/{NAME}.pte "  # not the page URL naming it
        fetched = sum(model_get in line for line in web_server.request_log)
        web_server.request_log.clear()
        page.reload()
        page.wait_for_function("window.chatReady === true", timeout=180_000)
        cached = page.evaluate("caches.open('pte-webgpu-models').then(c => c.keys())"
                               ".then(ks => ks.map(r => r.url))")
        refetched = sum(model_get in line for line in web_server.request_log)
    finally:
        page.close()
    return got, speed, fetched, refetched, cached


def test_chat_page_streams_the_native_answer_and_caches_the_model(browser_session, web_server,
                                                                   tmp_path):
    tok = write_tiny_tokenizer(tmp_path, NAME)
    web_server.mount("/chat-test/", tmp_path)
    want = _native_answer(tok)
    try:
        got, speed, fetched, refetched, cached = _chat_and_reload(browser_session, web_server, tok)
    except Exception as e:  # noqa: BLE001 - playwright's Error; anything else is re-raised
        if "Target crashed" not in str(e):
            raise
        # SwiftShader's renderer crashed at the reload once in a full two-worker CI run on
        # 2026-12-02 (this test passed alone and in other full runs): one more try in a
        # fresh page, every check below unchanged
        got, speed, fetched, refetched, cached = _chat_and_reload(browser_session, web_server, tok)
    assert got == want and want
    assert "tok/s" in speed
    assert fetched >= 1 and refetched == 0  # the reload read the Cache API (a retried GET may count twice)
    assert any(u.endswith(f"{NAME}.pte") for u in cached), cached


@pytest.mark.parametrize("variant", ["-fp16", "", "-q4"])
def test_chat_page_holds_the_weights_once_in_the_wasm_heap(browser_session, web_server, variant):
    """SmolLM2 (build/llm, `make llm`) loads with at most one copy of its .pte in Pyodide's
    wasm heap: float32 weights go to the GPU from views of it, float16 ones are widened in
    JS a slice at a time. The heap only grows, so its size after the load is the peak."""
    from tests.support.llm_models import LLM_NAME, llm_files

    files = llm_files(variant)
    web_server.mount("/llm-heap/", files["pte"].parent)
    page = browser_session.page.context.browser.new_page()
    try:
        page.goto(f"{web_server.url}chat.html?model=/llm-heap/{LLM_NAME}{variant}.pte"
                  f"&tokenizer=/llm-heap/{files['tokenizer'].name}")
        page.wait_for_function("window.chatReady === true || !document.querySelector"
                               "('#error').hidden", timeout=300_000)
        error = page.inner_text("#error")
        heap = page.evaluate("window.heapStats")
    finally:
        page.close()
    assert not error
    weights = files["pte"].stat().st_size
    growth = heap["peak"] - heap["before"]
    assert heap["peak"] == heap["after"]  # wasm memory never shrinks
    assert weights < growth < 2 * weights, (growth / weights, heap)  # a second copy: >= 2x
    # ~20-60 MB of the growth is not weights (tokenizer, graphs, Emscripten's growth steps):
    # fp32 1.19x, fp16 1.23x, q4 (103.8 MB) 1.23x (docs/llm.md)
    assert growth < 1.3 * weights, (growth / weights, heap)


def test_page_chat_load_returns_a_limit_error_for_the_page(browser_session, web_server):
    """In Pyodide, a model with a tensor beyond the adapter's binding limit gives the page
    a GpuLimitError message naming the tensor (shown to the user), not a traceback."""
    result = browser_session.run_python(f"""
import dataclasses
from pyodide.http import pyfetch
from pte_webgpu import Runtime
from pte_webgpu.llm import page_chat
if page_chat._runtime is None:
    page_chat._runtime = await Runtime.create("browser")
_dev = page_chat._runtime.device
_info = _dev.info
_dev.info = dataclasses.replace(_info, limits={{**_info.limits,
                                                "maxStorageBufferBindingSize": 1024}})
try:
    _pte = await (await pyfetch("/fixtures/decoders/{NAME}.pte")).bytes()
    _r = await page_chat.load(_pte, "{{}}")
finally:
    _dev.info = _info
_r
""")
    assert result["error"].startswith("GpuLimitError: plan 'forward' instruction 0 graph value ")
    assert "maxStorageBufferBindingSize is 1024 bytes" in result["error"]
    assert result["adapter"] in result["error"]


# A short chat template for the tiny decoder's 28-token cache: one byte a token, so two
# turns fit. The page renders it through Jinja as it renders a GGUF's.
SHORT_CHAT = ("{% for m in messages %}{{ m['role'][0] }}:{{ m['content'] }}\n{% endfor %}"
              "{% if add_generation_prompt %}a:{% endif %}")


def _short_tokenizer(folder):
    import json

    path = write_tiny_tokenizer(folder, NAME)
    spec = json.loads(path.read_text())
    spec["chat_template"] = SHORT_CHAT
    path.write_text(json.dumps(spec))
    return path


def test_picker_stop_and_the_next_turn_reusing_the_cache(browser_session, web_server, tmp_path):
    """Without ?model=, the page loads the smallest model of models.json (the picker lists
    them); Stop ends the answer mid-stream (a prefix of the full native answer), and the
    next turn's prefill reuses the cache, the stopped answer's tokens included."""
    import shutil

    from pte_webgpu.llm.model_list import write_index

    shutil.copy(tiny_case(NAME)["pte"], tmp_path / f"{NAME}.pte")
    tok = _short_tokenizer(tmp_path)
    write_index(tmp_path)
    full = _native_answer(tok)
    assert len(full) >= 4, full  # long enough to stop inside it
    web_server.mount("/chat-stop/", tmp_path)
    page = browser_session.page.context.browser.new_page()
    try:
        page.goto(f"{web_server.url}chat.html?models=/chat-stop/models.json")
        page.wait_for_function("window.chatReady === true", timeout=180_000)
        picked = page.inner_text("#model-url")
        options = page.eval_on_selector_all("#model-pick option", "os => os.map(o => o.text)")
        # Stop as soon as the first piece shows (the click lands while the GPU works)
        page.evaluate("""() => new MutationObserver((_, obs) => {
            const a = document.querySelector('.assistant');
            if (a && a.textContent) { document.getElementById('stop').click(); obs.disconnect(); }
        }).observe(document.getElementById('log'), {subtree: true, childList: true,
                                                     characterData: true})""")
        page.fill("#input", QUESTION)
        page.click("#send")
        page.wait_for_selector(".assistant[data-done=true]", timeout=180_000)
        first = page.eval_on_selector(".assistant", "a => ({text: a.textContent, "
                                      "stopped: a.dataset.stopped})")
        page.fill("#input", "Ho")
        page.click("#send")
        page.wait_for_function("document.querySelectorAll('.assistant[data-done=true]')"
                               ".length === 2", timeout=180_000)
        second = page.eval_on_selector_all(".assistant", "as => as[1].dataset.reused")
        speed = page.inner_text("#speed")
        error = page.inner_text("#error")
    finally:
        page.close()
    assert not error
    assert picked == f"/chat-stop/{NAME}.pte" and len(options) == 1 and NAME in options[0]
    assert first["stopped"] == "stopped", first
    assert first["text"] and full.startswith(first["text"]) and len(first["text"]) < len(full)
    # the first turn's prompt ("u:Hi\na:") and the stopped answer's tokens but its last
    assert int(second) >= len(f"u:{QUESTION}\na:"), (second, speed)
    assert "reused from the cache" in speed
