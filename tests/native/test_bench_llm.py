"""`pte-webgpu bench --llm` natively on a small real exported decoder (max_seq_len 28):
the records' schema, contexts and plan; a `llm_bench.py zero` .pte.gz with --export-json."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pte_webgpu.llm.bench_job import llm_bench_job, prompt_ids

from tests.support.decoders import DECODERS, INDEX
from tests.support.gpu_thread import run_sync

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")
REPO = Path(__file__).resolve().parents[2]
NAME = "llama_dynamic_rope"


def bench(*args):
    return subprocess.run([sys.executable, "-m", "pte_webgpu", "bench", "--backend", "native",
                           *map(str, args)], capture_output=True, text=True, timeout=120)


def check_records(records, contexts, steps, file):
    ours = [r for r in records if r["impl"] == "ours"]
    assert [(r["phase"], r["context"]) for r in ours] == \
        [(p, c) for c in contexts for p in ("prefill", "decode")]
    for r in records:
        assert {"impl", "phase", "context", "tok_s", "backend", "adapter", "ms_per_token",
                "dtype"} <= set(r), r
        assert r["backend"] == "native" and r["adapter"] and r["tok_s"] > 0
        assert r["impl"] in ("ours", "torch-cuda", "torch-cuda-graph", "torch-compile-graph")
    # the cache holds 28 rows: the last context prefills 28 - steps and decodes to row 27
    bound = INDEX[NAME]["model_args"]["max_context_len"]
    for r in ours:
        n = min(r["context"], bound - steps)
        if r["phase"] == "prefill":
            assert r["tokens"] == n and len(r["ms"]) == 1
        else:
            assert r["positions"] == [n, n + steps - 1] and r["steps"] == len(r["ms"]) == steps
            assert len(r["greedy"]) == steps + 1  # the prefill's token, then each step's
            assert r["cache"] == "prefill"  # ours always decodes after its own prefill
            cost = r["cost"]  # the decode step's recording: its own dispatches and passes
            assert cost["dispatches"] >= 10 and 1 <= cost["passes"] <= cost["dispatches"]
            assert cost["encode_us"] > 0 and (cost["gpu_us"] is None or cost["gpu_us"] > 0)
            # both in µs: a step's host work is more than its encode and far below a
            # second (no bound against ms_per_token: three chained steps time too little)
            assert cost["encode_us"] < cost["host_us"] < 1e6
            if "by_op" in cost:  # timestamps inside passes: every dispatch in one op's row
                assert sum(n for _, n in cost["by_op"].values()) == cost["dispatches"]
                assert cost["in_pass_us"] == pytest.approx(
                    sum(us for us, _ in cost["by_op"].values()), rel=1e-3, abs=0.1)
        assert r["file"] == file and r["dtype"] == "float32"
    torch = [r for r in records if r["impl"] == "torch-cuda"]  # where torch + CUDA exist
    assert not torch or sorted({r["context"] for r in torch}) == sorted(contexts)


def test_bench_llm_writes_records_table_and_profile(tmp_path):
    out = tmp_path / "llm.json"
    done = bench("--llm", DECODERS / f"{NAME}.pte", "--contexts", "4,16,28", "--steps", "2",
                 "--output", out, "--markdown", tmp_path / "llm.md", "--profile", "--no-torch")
    assert done.returncode == 0, done.stderr
    records = json.loads(out.read_text())
    check_records(records, [4, 16, 28], 2, f"{NAME}.pte")
    table = (tmp_path / "llm.md").read_text()
    assert "| ours | prefill |" in table and "| ours | decode |" in table
    assert "ctx 28: prefill 26 tokens, decode 2 steps at positions 26..27" in table
    assert "Where a decode step of ours goes" in table and "| 28 | " in table
    if all("by_op" in r["cost"] for r in records if r["phase"] == "decode"):
        assert "Context 28, each dispatch timed inside its pass" in table
    # --profile: each prefill's cost too
    prefills = {r["context"]: r for r in records if r["phase"] == "prefill"}
    assert all(r["cost"]["dispatches"] > 0 for r in prefills.values())
    if "by_op" in prefills[28]["cost"]:
        assert "Prefill of 26 tokens, each dispatch timed inside its pass" in table
    profiles = json.loads((tmp_path / "llm.profile.json").read_text())["ours"]
    assert sorted(profiles) == ["16", "28", "4"]
    ops = {row["op"] for row in profiles["4"] if row["dispatches"]}
    # (the attention with its RoPE folded in, the tables' slices too: fusion_rope.py)
    assert "pte_webgpu.sdpa_rope_rows" in ops and ops & {
        "aten.linear.default", "pte_webgpu.fused_linear", "pte_webgpu.norm_linear"}


# the fp16 one's tokens depend on the positions fed (the fp32 one's tiny random weights
# give the same argmax at a wrong position)
@pytest.mark.parametrize("name", [NAME, "llama_dynamic_rope_fp16"])
def test_bench_llm_tokens_equal_host_fed_steps(runtime, name):
    """The job's warm-up (chained steps over the whole cache for ramp_ms) and its decode
    (IN_FLIGHT steps submitted ahead, fed on the GPU) leave each context's greedy tokens
    those of a plain prefill and host-fed steps of the same prompt."""
    pte = (DECODERS / f"{name}.pte").read_bytes()

    async def go():
        result = await llm_bench_job(pte, contexts=[4, 16, 28], steps=5, runtime=runtime,
                                     ramp_ms=300)
        program = await runtime.load_program(pte)
        try:
            method = program.load_method("forward")
            want = {}
            for r in (r for r in result["records"] if r["phase"] == "decode"):
                n = r["positions"][0]
                method.reset()
                ids = prompt_ids(n, INDEX[name]["model_args"]["vocab_size"])
                tokens = await method.execute([np.array([ids], np.int64),
                                               np.array([0], np.int64)], argmax=True)
                for k in range(5):
                    tokens.append((await method.execute(
                        [np.array([tokens[-1:]], np.int64), np.array([n + k], np.int64)],
                        argmax=True))[0])
                want[r["context"]] = (tokens, r["greedy"])
            return want
        finally:
            program.close()

    for context, (want, got) in run_sync(go()).items():
        assert got == want, context


def test_bench_llm_takes_a_zero_weight_gz_with_its_export_json(tmp_path):
    gz = tmp_path / f"{NAME}.pte.gz"
    subprocess.run([sys.executable, str(REPO / "bench" / "llm_bench.py"), "zero",
                    DECODERS / f"{NAME}.pte", gz], check=True, capture_output=True, timeout=60)
    args = INDEX[NAME]["model_args"]
    hparams = dict(args, head_dim=args["dim"] // args["n_heads"], tied_output=False)
    export = tmp_path / "tiny.export.json"
    export.write_text(json.dumps({"hparams": hparams,
                                  "programs": {"fp32": {"file": f"{NAME}.pte"}}}))
    out = tmp_path / "gz.json"
    done = bench("--llm", gz, "--export-json", export, "--contexts", "8", "--steps", "3",
                 "--output", out, "--no-warmup", "-q")
    assert done.returncode == 0, done.stderr
    check_records(json.loads(out.read_text()), [8], 3, gz.name)
