"""Where one decode step's time goes (``bench --llm``, the cost model of
docs/performance.md): measured right after the bench's decode steps, so the recording's
grids are those of a decode step at that context (with ``--profile``, after its prefill
too: the prefill's grids).

- ``gpu_us``: the step's dispatches back to back, one timed compute pass per run of
  dispatches as ``execute`` encodes them (a copy ends a run), the argmax pass included:
  the GPU's own time with no host in it (needs timestamps);
- ``encode_us``: the host encoding that recording and finishing the command buffer,
  submitting nothing (in the page: the one JS call that encodes it);
- ``dispatches`` and ``passes`` of the step;
- ``by_op`` (where the device has timestamps inside passes: wgpu-native, Chromium with
  developer features): the same passes with a timestamp after every dispatch, each
  dispatch's GPU µs (its barrier included) summed by op and grid as [µs, dispatches], and
  ``in_pass_us`` their total;
- (added by llm/bench_job.py) ``host_us``: the median time ``execute(wait=False)`` took
  to return during the timed steps, the host's whole work for one chained step.

A chained step (the bench's ``ms``) costs about max(GPU, host: encode + submit + the
steps' host work) when the two overlap, their sum when they do not.
"""

from __future__ import annotations

import statistics
import time

from ..gpu.recording import dispatch_runs
from ..runtime.method import gpu_work

RUNS = 5


async def step_cost(method, timestamps: bool) -> dict:
    """{dispatches, passes, gpu_us (None without timestamps), encode_us} of the step the
    last execute ran (medians of RUNS)."""
    work = gpu_work(method)
    recording = work.pick_recording or work.recording
    runs = dispatch_runs(recording.steps)
    device = work.device
    encode = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        device.encode_only(recording)
        encode.append((time.perf_counter() - t0) * 1e6)
    gpu = None
    if timestamps:
        totals = []
        for _ in range(RUNS):
            totals.append(sum([await device.time_one_pass(run) for run in runs]) / 1e3)
        gpu = statistics.median(totals)
    cost = {"dispatches": sum(map(len, runs)), "passes": len(runs), "gpu_us": gpu,
            "encode_us": statistics.median(encode)}
    if timestamps and device.info.traits.timestamps_in_pass:
        cost.update(await _by_op(device, runs))
    return cost


async def _by_op(device, runs) -> dict:
    """{by_op: {"label grid": [µs, dispatches]}, in_pass_us}: each dispatch's median of RUNS."""
    each = [[] for run in runs]
    for _ in range(RUNS):
        for got, run in zip(each, runs):
            got.append(await device.time_each_in_pass(run))
    by_op: dict[str, list] = {}
    total = 0.0
    for got, run in zip(each, runs):
        for step, times in zip(run, zip(*got)):
            us = statistics.median(times) / 1e3
            total += us
            # by op and grid: one op's shapes apart (q/k/v, gate/up and the lm head)
            entry = by_op.setdefault(f"{step.label} {'x'.join(map(str, step.grid))}", [0.0, 0])
            entry[0] += us
            entry[1] += 1
    return {"by_op": {k: [round(v[0], 2), v[1]] for k, v in by_op.items()},
            "in_pass_us": total}
