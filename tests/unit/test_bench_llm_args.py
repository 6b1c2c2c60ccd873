"""`pte-webgpu bench --llm` argument errors: exit 2, one line, before any GPU or browser;
the per-context plan (prefill length, decode positions) within the KV cache."""

from pathlib import Path

import pytest
from pte_webgpu.errors import InputError
from pte_webgpu.llm.bench_job import plan

from tests.support.cli import cli_run, one_line_exit_2

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TINY = FIXTURES / "decoders" / "llama_dynamic_rope.pte"  # KV cache of 28 rows


@pytest.mark.parametrize("args, fragment", [
    (["--contexts", "0"], "--contexts"),
    (["--contexts", "16,abc"], "--contexts"),
    (["--contexts", "29"], "context 29 is outside 1..28"),
    (["--contexts", "16", "--steps", "28"], "do not fit a KV cache of 28"),
    (["--steps", "0"], "--steps"),
    (["--op", "linear"], "--llm does not take --op"),
    (["--shapes", "1x64"], "--llm does not take --shapes"),
    (["--export-json", "/nonexistent/e.json"], "--export-json"),
    (["--peer-prefill-max", "-1"], "--peer-prefill-max"),
    (["--peer-prefill-max", "8"], "--peer-prefill-max is for --backend browser"),
])
def test_bad_llm_arguments_exit_2_with_one_line(args, fragment):
    one_line_exit_2(cli_run("bench", "--llm", TINY, "--backend", "native", *args), fragment)


def test_a_missing_model_or_one_without_a_kv_cache(tmp_path):
    one_line_exit_2(cli_run("bench", "--llm", tmp_path / "no.pte"), "cannot read")
    one_line_exit_2(cli_run("bench", "--llm", FIXTURES / "add_2x3x4.pte"), "forward")
    (tmp_path / "bad.pte.gz").write_bytes(b"not gzip")
    one_line_exit_2(cli_run("bench", "--llm", tmp_path / "bad.pte.gz"), "gzip")


def test_plan_keeps_decode_inside_the_cache():
    # SmolLM2's export: 1024 cache rows, prefill chunks of 1023 tokens
    got = plan([16, 256, 1024], 8, 1024, 1023)
    assert [(p["context"], p["prefill"]) for p in got] == [(16, 16), (256, 256), (1024, 1016)]
    assert all(p["prefill"] + p["steps"] <= 1024 for p in got)
    assert plan([1024], 1, 1024, 1023)[0]["prefill"] == 1023  # one execute takes 1023 at most
    with pytest.raises(InputError, match="static shapes"):
        plan([16], 8, 1024, 1)


def test_the_peers_decode_from_a_seeded_cache_past_their_prefill_limit():
    import sys

    sys.path.insert(0, str(FIXTURES.parents[1] / "bench"))
    try:
        from llm_browser import PEER_PREFILL_MAX, seed_plan
    finally:
        sys.path.remove(str(FIXTURES.parents[1] / "bench"))
    todo = plan([16, 256, 1024], 8, 1024, 1023)
    got = seed_plan(todo, PEER_PREFILL_MAX)
    # the same prefill lengths and decode positions as ours; only 1016 > 256 is seeded
    assert [(p["context"], p["prefill"], p["steps"], p["cache"]) for p in got] == [
        (16, 16, 8, "prefill"), (256, 256, 8, "prefill"), (1024, 1016, 8, "seeded")]
    assert [p["cache"] for p in seed_plan(todo, 0)] == ["seeded"] * 3
