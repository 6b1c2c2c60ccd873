"""`bench --llm --backend browser`'s ort-web-genai peers: ORT Web's WebGPU EP (bench/llm_web.js
benchGenaiLlm) on graphs of onnxruntime-genai's builder (GroupQueryAttention, MatMulNBits,
SkipSimplifiedLayerNormalization) for a tiny random Llama (tests/fixtures/llm_onnx_genai,
made by ``python -m pte_webgpu.export.llm_onnx_genai --tiny``), its KV cache one GPU buffer per
layer bound as both past and present. Each run's logits row after a real prefill matches ONNX
Runtime's (Python, CPU) on the same graph, and so do the greedy tokens (fp32: torch's too).
transformers.js (bench/llm_web.js benchTjsLlm: generate() on the same graphs, its cache grown
on the GPU) picks the same tokens as the ORT row, after the prefill and from the zero cache.
Needs onnxruntime-web and transformers.js (`make llm-web-deps`)."""

import concurrent.futures
import json

import numpy as np
import pytest
from pte_webgpu.llm.bench_job import plan, prompt_ids

from tests.browser.test_bench_llm_web import REPO, TINY_PTE, llm_browser

GENAI = REPO / "tests" / "fixtures" / "llm_onnx_genai"


@pytest.mark.parametrize("mode", ["shared"])
def test_ort_web_genai_follows_onnxruntime_cpu(mode):
    bench = llm_browser()
    if not (bench.ORT_DIST / "ort.webgpu.mjs").is_file():
        pytest.skip("no onnxruntime-web: `make llm-web-deps` installs it into build/")
    ref = json.loads((GENAI / "reference.json").read_text())
    config = json.loads((GENAI / "config.json").read_text())
    steps = len(ref["fp32"]["ort_cpu_tokens"]) - 1  # the prefill's token, then the steps
    # context 5 prefills for real; 12 is past the peer prefill limit: a zero cache of 12 rows
    todo = plan([len(ref["prompt"]), 12], steps, 28, 27)
    lines = []
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a Playwright of its own
        _, records = pool.submit(bench.run, TINY_PTE, todo, onnx_dir=GENAI / "none", genai_dir=GENAI,
                                 genai_mode=mode, keep_logits=True, ours=False, peer_prefill_max=5,
                                 progress=lines.append).result()
    assert not any("failed" in line for line in lines), lines
    for precision in ("fp32", "int4"):
        want = ref[precision]
        got = [r for r in records if r["impl"] == f"ort-web-genai {precision} webgpu-ep"]
        assert [(r["phase"], r["context"]) for r in got] == [
            ("prefill", 5), ("decode", 5), ("decode", 12)], (precision, got)
        assert got[0]["tokens"] == 5 and got[1]["positions"] == [5, 5 + steps - 1]
        assert got[1]["greedy"] == want["ort_cpu_tokens"], (precision, got[1]["greedy"])
        if precision == "fp32":
            assert got[1]["greedy"] == want["torch_tokens"]
        # the prefill's row, then one per decode step: ORT CPU's on the same graph
        diff = np.abs(np.array(got[1]["logits"]) - np.array(want["logits"])).max()
        assert diff < (1e-4 if precision == "fp32" else 2e-2), (precision, diff)
        # seeded: the steps at ours' positions 12.. from zeros, the shared cache holding them
        seeded = got[2]
        assert seeded["cache"] == "seeded" and seeded["positions"] == [12, 12 + steps - 1]
        assert seeded["greedy"][0] == prompt_ids(13, config["vocab_size"])[12]
        assert seeded["present"][:2] == [1, config["num_key_value_heads"]]
        assert seeded["present"][2] >= 12 + steps and seeded["present"][3] == config["head_dim"]
        assert all(0 <= t < config["vocab_size"] for t in seeded["greedy"])
        assert all(r["tok_s"] > 0 and r["adapter"].startswith("browser") for r in got)
        assert all("webgpu-ep" in r["version"] for r in got)
        if not (bench.TJS_DIST / "transformers.min.js").is_file():
            continue
        # transformers.js on the same graph: ORT's picks, after the prefill and from the zero
        # cache, its cache on the GPU one row longer a step
        tjs = [r for r in records if r["impl"] == f"transformers.js genai {precision}"]
        assert [(r["phase"], r["context"]) for r in tjs] == [
            ("prefill", 5), ("decode", 5), ("decode", 12)], (precision, tjs)
        assert tjs[0]["tokens"] == 5 and tjs[1]["positions"] == [5, 5 + steps - 1]
        assert tjs[1]["greedy"] == got[1]["greedy"] == want["ort_cpu_tokens"], (precision, tjs[1])
        assert tjs[2]["cache"] == "seeded" and tjs[2]["greedy"] == seeded["greedy"], (precision, tjs[2])
        kv = [1, config["num_key_value_heads"], None, config["head_dim"]]
        assert tjs[1]["present"] == kv[:2] + [5 + steps] + kv[3:]
        assert tjs[2]["present"] == kv[:2] + [12 + steps] + kv[3:]
        assert tjs[1]["kvLocation"] == tjs[2]["kvLocation"] == "gpu-buffer"
        assert all(r["tok_s"] > 0 and "@huggingface/transformers 4." in r["version"] for r in tjs)
