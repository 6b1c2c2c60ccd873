"""Ours' side of ``pte-webgpu bench --vision``: where the adapter is, in CPython (native,
wgpu) or inside Pyodide (browser: the host sends this file's text to the page, as it does
gpu_bench.py's). Imports only the runtime and the standard library.

``vision_job``: load the program, run it ``warmup`` times, then ``runs`` timed executes of
batch 1, each one image in from the host and the outputs back on the host (what a caller
of ``execute`` waits for). Where the timer is coarse (the page: performance.now() steps by
0.1 ms without cross-origin isolation) a sample is ``group`` images back to back, each
awaited, divided by ``group``: still one image at a time, with the timer's step divided.
Then, with the adapter's timestamp queries, the model's GPU time two ways: every dispatch
in a timed pass of its own, summed (``execute(profile=True)``; a pass adds a floor per
dispatch), and its dispatches as execute encodes them (consecutive dispatches in one pass,
a pass per run of them between copies), each pass timed. Last, the copy kernel over as
many bytes as the program's weights (gpu_bench.copy_records): the bandwidth floor of
reading the weights once.
"""

from __future__ import annotations

import base64
import math
import statistics
import time

MIN_SAMPLE_S = {"native": 0.0, "browser": 0.005}
WARMUP_S = 2.0


def spread(ms: list[float]) -> dict:
    """Median, min, max, p10, p90 and their spread of the samples ``ms``."""
    s = sorted(ms)

    def q(f):
        return s[min(len(s) - 1, int(round(f * (len(s) - 1))))]
    return {"median_ms": statistics.median(s), "min_ms": s[0], "max_ms": s[-1],
            "p10_ms": q(0.1), "p90_ms": q(0.9), "samples": len(s)}


def weight_bytes(pte: bytes, data_files=()) -> int:
    """The bytes of the program's Vulkan constants (its weights, prepacked or not)."""
    from pte_webgpu.formats import open_program

    file = open_program(pte, data_files)
    return sum(c.length for p in file.plans for d in p.delegates
               if getattr(d, "graph", None) is not None for c in d.graph.graph.constants)


async def _gpu_times(method, inputs, repeats: int = 5) -> dict:
    from pte_webgpu.gpu.recording import dispatch_runs
    from pte_webgpu.runtime.method import gpu_work

    work = gpu_work(method)
    device = work.device
    profiles = []
    for _ in range(repeats):
        await method.execute(inputs, as_numpy=False, profile=True)
        profiles.append(sum(row["us"] for row in method.last_profile) / 1e3)
    passes = []
    segments = dispatch_runs(work.recording.steps)
    for _ in range(repeats):
        total = 0.0
        for run in segments:
            total += await device.time_one_pass(run)
        passes.append(total / 1e6)
    rows = {}
    for row in method.last_profile:  # per op, from the last profiled execute
        r = rows.setdefault(row.get("op", "?"), {"op": row.get("op", "?"), "us": 0.0,
                                                 "dispatches": 0})
        r["us"] += row["us"]
        r["dispatches"] += row.get("dispatches", 0)
    return {"gpu_profile_ms": statistics.median(profiles), "gpu_pass_ms": statistics.median(passes),
            "passes": len(segments), "dispatches": sum(len(r) for r in segments),
            "profile": sorted(rows.values(), key=lambda r: -r["us"])}


async def _copy(device, nbytes: int) -> list[dict]:
    import gpu_bench
    from pte_webgpu.runtime.build import Resources

    nbytes = max(16, -(-nbytes // 16) * 16)
    resources = Resources(device)
    try:
        src = resources.buffer(nbytes, "bench copy src")
        dst = resources.buffer(nbytes, "bench copy dst")
        return await gpu_bench.copy_records(device, gpu_bench.Timer(device), src, dst, nbytes)
    finally:
        resources.release()


async def vision_job(pte: bytes, image: bytes, *, runs: int = 50, warmup: int = 10,
                     backend: str = "native", gpu: bool = True, copy: bool = True,
                     runtime=None, progress=None) -> dict:
    """One record of ours for the program ``pte`` fed ``image`` (the float32 bytes of its
    one input), plus the copy-kernel records; the last output's bytes, base64."""
    from pte_webgpu import Runtime
    from pte_webgpu.model.tensor import Tensor

    say = progress or (lambda text: None)
    rt = runtime or await Runtime.create(backend)
    try:
        started = time.perf_counter()
        program = await rt.load_program(pte)
        load_s = time.perf_counter() - started
        try:
            method = program.load_method("forward")
            specs = method.input_specs()
            if len(specs) != 1 or specs[0][1] != "float32":
                raise ValueError(f"an image model takes one float32 input; this one takes "
                                 f"{[f'{d}{list(s)}' for s, d in specs]}")
            shape = specs[0][0]
            x = Tensor(image, shape, "float32")
            inputs = [x]
            say(f"loaded in {load_s:.2f} s; {warmup} warm-up runs, {WARMUP_S:.0f} s at least")
            first, done = time.perf_counter(), 0
            # at least WARMUP_S too: an idle GPU's clocks take a second or two to rise
            while done < max(1, warmup) or time.perf_counter() - first < WARMUP_S:
                await method.execute(inputs, as_numpy=False)
                done += 1
            one = (time.perf_counter() - first) / done
            group = max(1, math.ceil(MIN_SAMPLE_S.get(rt.adapter.backend, 0.0) / max(one, 1e-6)))
            say(f"{runs} timed samples of {group} image(s)")
            ms = []
            for _ in range(runs):
                t0 = time.perf_counter()
                for _ in range(group):
                    outs = await method.execute(inputs, as_numpy=False)
                ms.append((time.perf_counter() - t0) * 1e3 / group)
            rec = dict(spread(ms), impl="ours", ms=ms, group=group, warmup=warmup,
                       input=list(shape), load_s=load_s, adapter=rt.adapter.summary(),
                       backend=rt.adapter.backend,
                       timestamps="timestamp-query" in rt.adapter.features)
            if gpu and rec["timestamps"]:
                say("GPU time from timestamps")
                rec.update(await _gpu_times(method, inputs))
            out = outs[0]
            result = {"records": [rec], "output": {
                "shape": list(out.shape), "dtype": getattr(out.dtype, "name", str(out.dtype)),
                "b64": base64.b64encode(out.tobytes()).decode()}}
            if copy:
                nbytes = weight_bytes(pte)
                say(f"copy kernel over {nbytes / 1e6:.2f} MB (the weights)")
                result["records"] += [dict(r, weights_bytes=nbytes, adapter=rec["adapter"],
                                           backend=rec["backend"])
                                      for r in await _copy(rt.device, nbytes)]
            return result
        finally:
            program.close()
    finally:
        if runtime is None:
            rt.close()
