"""The probe table natively: every case gives its typed error or the reference's result,
fast, without leaking GPU buffers or growing the process by more than its budget."""

from __future__ import annotations

import resource

import pytest
from pte_webgpu import errors

from tests.support.gpu_thread import native_runtime, run_sync

from .runner import expected_outputs, matches, run
from .table import CASES, accepts

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")

TIME_LIMIT_S = 10.0
PEAK_GROWTH_MB = 300  # no case may raise the process's peak memory by more than this


@pytest.fixture(scope="module")
def runtime():
    yield from native_runtime()


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_probe(runtime, case):
    before_peak = _peak_mb()
    live = runtime.device.live_buffer_count
    outcome, message, outs, ins, seconds, made = run_sync(run(runtime, case))
    assert accepts(case.expect, outcome), (outcome, message)
    assert case.match in message, message
    assert seconds < TIME_LIMIT_S, f"{seconds:.1f} s"
    assert runtime.device.live_buffer_count == live, "buffers left behind"
    assert _peak_mb() - before_peak < PEAK_GROWTH_MB
    if outcome == "ok" and case.compare:
        assert not matches(outs, expected_outputs(made, ins)), matches(outs, expected_outputs(
            made, ins))



@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_probe_inspect(case):
    """``inspect`` reads every crafted program in seconds (huge counts once took it ~70 s and
    Python's int-to-str limit) and fails, if at all, with a PteError."""
    import time

    from pte_webgpu import formats
    from pte_webgpu.app import describe

    made = case.build()
    t0 = time.perf_counter()
    try:
        program = formats.open_program(made.pte, made.ptds)
        describe.render_text(describe.describe(program, "probe.pte", len(made.pte)))
    except errors.PteError:
        pass
    assert time.perf_counter() - t0 < 5.0  # the largest (800 KB) parse in ~1 s alone
