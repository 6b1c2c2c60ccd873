"""tools/h200_browser_bench.py, the browser bench for the lent GPU (no Playwright there), run
here on SwiftShader as it runs there: ``prepare`` a tiny program's plan and the tiny builder
graphs of tests/fixtures/llm_onnx_genai (their weights zeroed and gzipped, ORT's files
gzipped), then ``run`` ours, ORT Web's WebGPU EP and transformers.js (its layout of the
builder's graphs and its files gzipped too) in one Chromium over the DevTools pipe: a prefill
and a decode record per context for every impl. Needs onnxruntime-web and transformers.js
(`make llm-web-deps`)."""

import json
import subprocess
import sys

import pytest
from pte_webgpu.chromium.config import launch_options
from pte_webgpu.chromium.dist import ensure_dist

from tests.browser.test_bench_llm_web import REPO, TINY_PTE, llm_browser

pytestmark = pytest.mark.browser
TOOL = REPO / "tools" / "h200_browser_bench.py"
GENAI = REPO / "tests" / "fixtures" / "llm_onnx_genai"


def test_gpu_browser_bench_runs_ours_and_the_genai_peers(tmp_path):
    if not (llm_browser().ORT_DIST / "ort.webgpu.mjs").is_file():
        pytest.skip("no onnxruntime-web: `make llm-web-deps` installs it into build/")
    out = tmp_path / "bench"
    subprocess.run([sys.executable, TOOL, "prepare", "--model", TINY_PTE, "--contexts", "5,9",
                    "--steps", "2", "--genai", GENAI, "--out", out], check=True, timeout=120)
    spec = json.loads((out / "spec.json").read_text())
    assert [p["context"] for p in spec["plan"]] == [5, 9]
    zeroed = out / "genai-int4" / (spec["genai"]["ort-web-genai int4 webgpu-ep"]["genai"]
                                   ["external"] + ".gz")
    assert zeroed.is_file() and zeroed.stat().st_size < (GENAI / "int4" / zeroed.stem).stat().st_size
    tjs = (llm_browser().TJS_DIST / "transformers.min.js").is_file()
    if tjs:  # transformers.js's layout of each graph (the weights the zeroed ones), its files
        assert spec["tjs"]["transformers.js genai int4"]["tjs"]["dtype"] == "q4"
        assert (out / "genai-int4" / "tjs" / "onnx" / "model_q4.onnx").is_file()
        assert (out / "genai-fp32" / "tjs" / "onnx" / "model.onnx").is_file()
        assert sorted(f.name for f in (out / "tjs").iterdir()) == [
            "ort-wasm-simd-threaded.asyncify.mjs.gz", "ort-wasm-simd-threaded.asyncify.wasm.gz",
            "transformers.min.js.gz"]
    result = tmp_path / "result.json"
    run = subprocess.run(
        [sys.executable, TOOL, "run", "--chrome", launch_options()["executable_path"],
         "--dist", ensure_dist(), "--spec", out / "spec.json", "--models", TINY_PTE.parent,
         "--programs", TINY_PTE.name, "--out", result,
         "--settings", "base: norope:PTE_WEBGPU_FOLDS_OFF=rope", "--",
         "--enable-unsafe-webgpu", "--headless=new"],
        capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    records = json.loads(result.read_text())["records"]
    impls = {"ort-web-genai fp32 webgpu-ep", "ort-web-genai int4 webgpu-ep",
             f"ours {TINY_PTE.name}", f"ours {TINY_PTE.name} [norope]"}
    if tjs:
        impls |= {"transformers.js genai fp32", "transformers.js genai int4"}
    assert {r["impl"] for r in records} == impls, run.stdout[-3000:]
    for impl in impls:
        got = sorted((r["phase"], r["context"]) for r in records if r["impl"] == impl)
        assert got == [("decode", 5), ("decode", 9), ("prefill", 5), ("prefill", 9)], (impl, got)
    assert all(r["tok_s"] > 0 and r["adapter"].startswith("browser") for r in records)
    # --settings: the page's environment while ours builds; the rope fold off costs a
    # dispatch a layer, and the greedy picks stay
    ours = {label: [r for r in records if r["impl"] == f"ours {TINY_PTE.name}{label}"
                    and r["phase"] == "decode"] for label in ("", " [norope]")}
    assert [r["greedy"] for r in ours[""]] == [r["greedy"] for r in ours[" [norope]"]]
    assert all(a["cost"]["dispatches"] < b["cost"]["dispatches"]
               for a, b in zip(ours[""], ours[" [norope]"]))
    for precision in ("fp32", "int4") if tjs else ():  # the same zero weights: the same picks
        pair = (f"ort-web-genai {precision} webgpu-ep", f"transformers.js genai {precision}")
        picks = [[r["greedy"] for r in records if r["impl"] == impl and r["phase"] == "decode"]
                 for impl in pair]
        assert picks[0] == picks[1], (precision, picks)
