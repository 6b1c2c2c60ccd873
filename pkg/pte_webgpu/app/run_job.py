"""One "run this program on these inputs" job, the same in the page and natively.

The CLI sends the file bytes to wherever the GPU is (Pyodide in Chromium, or
CPython with wgpu) and calls ``run_job`` there; it returns JSON-able results
with the outputs as an ``.npz`` (base64), named out0.. like the fixtures, or stepK_outJ /
seq_outJ for stateful runs of several calls (steps.py). ``execute_ms`` times all calls.
Single-call inputs follow the rule of inputs.py; members named like an output (outN,
stepK_outJ, seq_outJ) are compared with it.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import statistics
import time

from ..formats import npy
from ..reference import interpreter as reference
from ..runtime import Runtime
from . import npz_inputs as inputs_rule
from . import steps


async def run_job(pte: bytes, data_files=(), inputs_npz: bytes | None = None, repeat: int = 1,
                  backend: str = "auto", runtime: Runtime | None = None,
                  profile: bool = False, cast: bool = False, progress=None) -> dict:
    """``progress(text)``, when given, hears of each step that may take more than a second."""
    progress = progress or (lambda text: None)
    if runtime is None:
        progress("creating the WebGPU device")
    rt = runtime or await Runtime.create(backend)
    progress("loading the program (shaders, constants)")
    started = time.perf_counter()
    program = await rt.load_program(pte, data_files)
    try:
        method = program.load_method("forward")
        load_s = time.perf_counter() - started
        arrays = npy.read_npz(inputs_npz, "inputs") if inputs_npz is not None else {}
        mode, calls = steps.plan_calls(arrays)  # stepK_inJ / seq_inJ / inJ (steps.py)
        if mode == "single":
            inputs, _ = inputs_rule.match_inputs(method.input_specs(), arrays, cast=cast)
            calls = [inputs]
        progress(f"executing {repeat} time{'s' * (repeat != 1)}")
        times, results = [], []
        for _ in range(max(1, repeat)):
            method.reset()  # each repeat runs the steps from the initial state
            t0 = time.perf_counter()
            results = [await method.execute(inputs, as_numpy=False) for inputs in calls]
            times.append(time.perf_counter() - t0)
        named = steps.name_outputs(mode, results)
        if profile:  # after the timed runs, so they stay free of profiling overhead
            progress("profiling one more execute")
            method.reset()
            await method.execute(calls[0], as_numpy=False, profile=True)
        return {
            "adapter": rt.adapter.summary(),
            "load_ms": load_s * 1e3,
            "execute_ms": [t * 1e3 for t in times],
            "median_execute_ms": statistics.median(times) * 1e3,
            "outputs": [{"name": k, "shape": list(t.shape), "dtype": t.dtype.name,
                         **_compare(t, arrays.get(k))}
                        for k, t in named.items()],
            "outputs_npz_b64": base64.b64encode(npy.write_npz(named)).decode("ascii"),
            "kernels": method.kernels,
            "notes": method.notes,
            "profile": method.last_profile,
            "timestamps": "timestamp-query" in rt.adapter.features,
        }
    finally:
        program.close()
        if runtime is None:
            rt.close()


def _compare(got, want) -> dict:
    """{"max_abs_error": ...} against the expected array, or why it cannot be compared."""
    if want is None:
        return {}
    if tuple(want.shape) != tuple(got.shape):
        return {"expected_mismatch": f"expected shape {list(want.shape)}"}
    a, b = reference.from_tensor(got).values, reference.from_tensor(want).values
    diff = max((abs(x - y) if x == x and y == y else (0.0 if x != x and y != y else float("inf"))
                for x, y in zip(a, b)), default=0.0)
    return {"max_abs_error": diff}


def run_coroutine(coro):
    """``asyncio.run(coro)``, also when this thread already runs an event loop (a
    notebook, Playwright's sync API): then in a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
