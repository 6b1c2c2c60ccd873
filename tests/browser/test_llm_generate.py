"""Generation in Pyodide on headless Chromium's WebGPU: `pte-webgpu generate --backend
browser` on a tiny llama decoder (always), and SmolLM2-135M from `make llm` in the shared
page (when build/llm has it): greedy tokens equal eager torch's, streamed piece by piece."""

import json
import subprocess
import sys
import time

import numpy as np
import pytest
from pte_webgpu.llm.tokenizer import Tokenizer

from tests.support.llm_models import LLM_NAME, llm_files, tiny_case, write_tiny_tokenizer

pytestmark = pytest.mark.browser


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "pte_webgpu", *map(str, args)],
                          capture_output=True, text=True, timeout=900)


def test_cli_generate_in_the_browser_streams_torch_greedy_tokens(tmp_path, pyodide_dist):
    name = "llama_dynamic_hfrope"  # its prompt ids are all ASCII characters
    case = tiny_case(name)
    model = tmp_path / f"{name}.pte"
    model.write_bytes(case["pte"].read_bytes())
    tok = Tokenizer.from_file(write_tiny_tokenizer(tmp_path, name))
    prompt = tok.decode(case["prompt"])
    assert tok.encode(prompt) == case["prompt"]
    n = len(case["greedy"])
    done = _cli("generate", model, "--prompt", prompt, "--max-new-tokens", n, "--json")
    assert done.returncode == 0, done.stderr
    result, err = json.loads(done.stdout), done.stderr
    assert result["backend"] == "browser" and result["prefill_calls"] == 1
    assert result["prompt_ids"] == case["prompt"] and result["ids"] == case["greedy"]
    assert result["text"] == tok.decode(case["greedy"], skip_special=True)
    assert err == result["text"] + "\n"  # every piece came back through the page binding


def _page_generate(page, prompt: dict, n: int, variant: str = "") -> dict:
    held = "_smollm" + variant.replace("-", "_")  # one loaded model per variant in the page
    code = f"""
from pte_webgpu.llm.generate import LanguageModel
if "{held}" not in globals():
    _t0 = time.perf_counter()
    {held} = await LanguageModel.load(
        await runtime(), await fetch_bytes("/llm/{LLM_NAME}{variant}.pte"),
        (await fetch_bytes("/llm/{LLM_NAME}.tokenizer.json")).decode())
    _smollm_load_s = time.perf_counter() - _t0
_lm = {held}
_lm.reset()
_msgs = [{{"role": "user", "content": {prompt["text"]!r}}}] if {prompt["chat"]} else None
_ids = _lm.prompt_ids(None if _msgs else {prompt["text"]!r}, messages=_msgs)
_row0 = list(await _lm._feed(_ids))
_lm.reset()
_pieces = [p async for p in _lm.generate(ids=_ids, max_new_tokens={n})]
{{"prompt_ids": _ids, "ids": _lm.last.ids, "pieces": _pieces, "text": _lm.last.text,
  "row0": _row0, "prefill_ms": _lm.last.prefill_ms, "tok_s": _lm.last.decode_tok_s}}
"""
    return page.run_python("import time\n" + code)


@pytest.fixture(scope="module")
def llm_page(browser_session, web_server):
    files = llm_files()
    web_server.mount("/llm/", files["pte"].resolve().parent)  # build/llm may hold links
    browser_session.run_python((__import__("pathlib").Path(__file__).parent
                                / "page_support.py").read_text())
    return files, browser_session


def test_smollm_capital_of_france_in_the_browser(llm_page):
    files, page = llm_page
    prompt = next(p for p in files["reference"]["prompts"] if p["name"] == "chat_capital")
    want = prompt["eager_ids"]
    started = time.perf_counter()
    got = _page_generate(page, prompt, len(want))
    print(f"\nbrowser chat_capital: {len(got['ids'])} tokens in "
          f"{time.perf_counter() - started:.1f} s (with load), prefill {got['prefill_ms']:.0f} ms, "
          f"decode {got['tok_s']:.2f} tok/s: {got['text']!r}")
    assert got["prompt_ids"] == prompt["prompt_ids"]
    err = float(np.abs(np.asarray(got["row0"]) - np.load(files["logits"])["chat_capital"]).max())
    assert err <= 1e-3, err
    assert got["ids"] == want == prompt["hf_ids"]
    assert "".join(got["pieces"]) == got["text"] == prompt["eager_text"]


def test_smollm_q4_greedy_equals_eager_torch_in_the_browser(browser_session, web_server):
    """The 4-bit program (make llm's -q4.pte) against eager torch of the same quantized model
    (reference-q4.json): 32 greedy tokens and the step-0 logits of one prompt in the page
    (SwiftShader decodes it at well under 1 token/s; tests/native/test_llm_q4.py runs all 4
    prompts natively)."""
    files = llm_files("-q4")
    web_server.mount("/llm/", files["pte"].resolve().parent)
    browser_session.run_python((__import__("pathlib").Path(__file__).parent
                                / "page_support.py").read_text())
    ref = np.load(files["logits"])
    try:
        for prompt in [p for p in files["reference"]["prompts"] if p["name"] == "plain_fox"]:
            want = prompt["eager_ids"]
            got = _page_generate(browser_session, prompt, len(want), "-q4")
            assert got["prompt_ids"] == prompt["prompt_ids"], prompt["name"]
            err = float(np.abs(np.asarray(got["row0"]) - ref[prompt["name"]]).max())
            assert err <= 2e-3, (prompt["name"], err)
            assert got["ids"] == want, prompt["name"]
            assert "".join(got["pieces"]) == got["text"] == prompt["eager_text"]
    finally:
        browser_session.run_python("_m = globals().pop('_smollm_q4', None)\n"
                                   "if _m is not None:\n    _m.close()")


def test_cli_generate_in_the_browser_samples_on_the_gpu(tmp_path, pyodide_dist):
    """--temperature alone: drawn on the GPU in Pyodide (readout.Sample), the same ids for
    the same seed, other ids for another; a vanishing temperature gives torch's greedy."""
    name = "llama_dynamic_hfrope"
    case = tiny_case(name)
    model = tmp_path / f"{name}.pte"
    model.write_bytes(case["pte"].read_bytes())
    tok = Tokenizer.from_file(write_tiny_tokenizer(tmp_path, name))
    prompt, n = tok.decode(case["prompt"]), len(case["greedy"])
    runs = {}
    for key, extra in (("a", ["--temperature", 1.5, "--seed", 7]),
                       ("b", ["--temperature", 1.5, "--seed", 7]),
                       ("c", ["--temperature", 1.5, "--seed", 8]),
                       ("cold", ["--temperature", 1e-6])):
        done = _cli("generate", model, "--prompt", prompt, "--max-new-tokens", n, "--json",
                    *extra)
        assert done.returncode == 0, done.stderr
        runs[key] = json.loads(done.stdout)
    assert all(r["picked_on"] == "gpu" and r["backend"] == "browser" for r in runs.values())
    assert runs["a"]["ids"] == runs["b"]["ids"] != runs["c"]["ids"]
    assert runs["cold"]["ids"] == case["greedy"]
