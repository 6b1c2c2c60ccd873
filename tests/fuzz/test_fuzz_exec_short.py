"""A short load-and-execute fuzz run inside pytest (the long run: make fuzz-exec)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from .harness import case_rng

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")

CASES = 400
SEED = 20261201


@pytest.mark.fuzz
def test_short_exec_fuzz_run():
    import pte_webgpu

    from tests.support.gpu_thread import run_sync

    from .exec_harness import ALLOC_CAP, load_bases, run_case

    bases = load_bases()

    async def go():
        try:
            rt = await pte_webgpu.Runtime.create("native", {"max_alloc_bytes": ALLOC_CAP})
        except pte_webgpu.GpuError as e:
            pytest.skip(f"no native adapter: {e}")
        outcomes, escapes = Counter(), []
        try:
            for i in range(CASES):
                r = await run_case(rt, case_rng(SEED, i), bases[i % len(bases)])
                outcomes[r.outcome] += 1
                if r.escaped:
                    escapes.append(f"case {i} ({r.description}): {r.outcome}\n{r.detail}")
                await asyncio.sleep(0)
            live = rt.device.live_buffer_count
        finally:
            rt.close()
        return outcomes, escapes, live

    outcomes, escapes, live = run_sync(go())
    assert not escapes, "\n\n".join(escapes[:5])
    assert live == 0, f"{live} buffers left behind by failed loads"
    # the mutants must reach execution and the validation alike, or the run proves little
    assert outcomes["ok"] > CASES // 10 and outcomes["FormatError"] > CASES // 10, outcomes


@pytest.mark.fuzz
def test_supervisor_counts_a_crash_and_goes_on(tmp_path, monkeypatch):
    """A worker that dies mid-run (wgpu-native aborts on some errors) costs one CRASH
    escape; the supervisor restarts it after that case and finishes the rest."""
    from .exec_supervisor import run

    monkeypatch.setenv("PTE_FUZZ_ABORT_AT", "1")
    outcomes, escapes, _ = run(SEED, 0, 3, tmp_path, log=lambda m: None)
    assert outcomes["CRASH"] == 1 and sum(outcomes.values()) == 3, outcomes
    assert [(i, kind) for i, kind, *_ in escapes] == [(1, "CRASH")]
