"""`bench --llm --backend browser`: ORT Web and transformers.js (bench/llm_web.js) on a tiny
decoder as ONNX (tests/fixtures/llm_onnx, made by `make llm-onnx`'s code) give eager
torch's greedy tokens, and records like ours'. Needs the npm packages of `make llm-onnx`."""

import concurrent.futures
import json
import sys
from pathlib import Path

import pytest

from pte_webgpu.llm.bench_job import plan

REPO = Path(__file__).resolve().parents[2]
TINY_ONNX = REPO / "tests" / "fixtures" / "llm_onnx" / "tiny_llama"
TINY_PTE = REPO / "tests" / "fixtures" / "decoders" / "llama_dynamic_rope.pte"


def llm_browser():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        import llm_browser
    finally:
        sys.path.remove(str(REPO / "bench"))
    return llm_browser


def test_ort_web_and_transformers_js_follow_torch_greedy():
    bench = llm_browser()
    missing = [p for p in (bench.ORT_DIST / "ort.mjs", bench.TJS_MODULES / "@huggingface")
               if not p.exists()]
    if missing:
        pytest.skip(f"no {missing[0]}: `make llm-onnx` installs onnxruntime-web and "
                    "transformers.js into build/")
    want = json.loads((TINY_ONNX / "export.json").read_text())
    steps = len(want["greedy"]) - 1  # the prefill's token, then one per decode step
    todo = plan([len(want["prompt"])], steps, 28, 27)
    lines = []
    # its own Chromium, from a thread of its own: this thread's Playwright (the shared
    # session) runs an event loop that a second sync Playwright may not share
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        result, records = pool.submit(bench.run, TINY_PTE, todo, onnx_dir=TINY_ONNX,
                                      progress=lines.append).result()
    assert not any("failed" in line for line in lines), lines
    for impl in ("ort-web", "transformers.js"):
        got = [r for r in records if r["impl"] == impl]
        assert [(r["phase"], r["context"]) for r in got] == [("prefill", 5), ("decode", 5)], got
        assert got[0]["tokens"] == 5 and got[1]["positions"] == [5, 5 + steps - 1]
        assert got[1]["greedy"] == want["greedy"], (impl, got[1])
        assert all(r["tok_s"] > 0 and r["adapter"].startswith("browser") for r in got)
    assert [(r["phase"], r["context"]) for r in result["records"]] == [("prefill", 5), ("decode", 5)]
