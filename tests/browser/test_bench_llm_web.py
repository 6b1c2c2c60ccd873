"""`bench --llm --backend browser`: ORT Web and transformers.js (bench/llm_web.js) on a tiny
decoder as ONNX (tests/fixtures/llm_onnx, made by `make llm-onnx`'s code) give eager
torch's greedy tokens after a real prefill, decode from a seeded (zero) KV cache at ours'
positions past the prefill limit, and give records like ours'. Needs the npm packages of
`make llm-onnx`."""

import concurrent.futures
import json
import sys
from pathlib import Path

import pytest
from pte_webgpu.llm.bench_job import plan, prompt_ids

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
    # context 5 prefills for real; 12 is past the peers' prefill limit: seeded
    todo = plan([len(want["prompt"]), 12], steps, 28, 27)
    config = json.loads((TINY_ONNX / "config.json").read_text())
    lines = []
    # its own Chromium, from a thread of its own: this thread's Playwright (the shared
    # session) runs an event loop that a second sync Playwright may not share
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        result, records = pool.submit(bench.run, TINY_PTE, todo, onnx_dir=TINY_ONNX,
                                      peer_prefill_max=5, progress=lines.append).result()
    assert not any("failed" in line for line in lines), lines
    for impl in ("ort-web", "transformers.js"):
        got = [r for r in records if r["impl"] == impl]
        assert [(r["phase"], r["context"]) for r in got] == [
            ("prefill", 5), ("decode", 5), ("decode", 12)], got
        assert got[0]["tokens"] == 5 and got[1]["positions"] == [5, 5 + steps - 1]
        assert got[1]["greedy"] == want["greedy"] and got[1]["cache"] == "prefill", (impl, got[1])
        # seeded: 12 zero rows, then the steps at ours' positions 12.., the cache grown by one
        # row per step; the first step is fed the prompt's next id
        seeded = got[2]
        assert seeded["cache"] == "seeded" and seeded["positions"] == [12, 12 + steps - 1]
        assert seeded["present"] == [1, config["num_key_value_heads"], 12 + steps,
                                     config["head_dim"]], (impl, seeded)
        assert seeded["steps"] == steps and len(seeded["greedy"]) == steps + 1
        assert seeded["greedy"][0] == prompt_ids(13, config["vocab_size"])[12]
        assert all(0 <= t < config["vocab_size"] for t in seeded["greedy"])
        assert all(r["tok_s"] > 0 and r["adapter"].startswith("browser") for r in got)
    # the same zero cache and fed tokens: the two paths into ORT pick alike (transformers.js
    # took the seed and its positions rather than starting at 0)
    seeded = [r["greedy"] for r in records if r.get("cache") == "seeded"]
    assert seeded[0] == seeded[1], seeded
    assert [(r["phase"], r["context"]) for r in result["records"]] == [
        ("prefill", 5), ("decode", 5), ("prefill", 12), ("decode", 12)]
