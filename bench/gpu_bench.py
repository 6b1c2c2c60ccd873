"""The GPU side of ``pte-webgpu bench``: runs where the adapter is, in CPython (native,
wgpu) or inside Pyodide (browser; the host sends this file's text to the page).

For one shape it builds our rms_norm through the real op handler (``chosen``) and each
candidate variant through ``rms_norm.record``, plus a WGSL copy kernel of the same
bytes, then times each: GPU timestamp queries (one pass per op, begin/end written by the
pass) where the adapter has them, and always wall time around many back-to-back passes
in one submit, after a warm-up. Returns JSON-able records.
"""

from __future__ import annotations

import os
import random
from importlib import resources
import statistics
import struct

from pte_webgpu.gpu.recording import Dispatch, Recording, fold_grid
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import Graph, OpCall, Scalar, TensorValue
from pte_webgpu.ops import rms_norm
from pte_webgpu.runtime.build import BuildContext, Resources

OP = "et_vk.rms_norm.default"
EPS = 1e-6
TARGET_S = 0.25  # wall time aimed at per measurement (after warm-up)


# --- timing -------------------------------------------------------------------------------
class Timer:
    """Times dispatches on any GpuDevice through its timing methods (``time_passes``,
    ``time_one_pass``, ``run(profile=True)``), so the bench needs no backend-specific code."""

    def __init__(self, dev):
        self.dev = dev
        self.timestamps = dev.info.traits.timestamps

    async def wall(self, steps) -> float:
        """Seconds for ``steps`` (one compute pass each) submitted at once, until the
        queue is done."""
        return await self.dev.time_passes(steps)

    async def pass_ns(self, steps) -> float:
        """GPU time of ``steps`` encoded in ONE compute pass, from the pass's two
        timestamps: back-to-back dispatches, as in a model's recording (the per-pass
        cost that ``gpu_ns`` pays for each dispatch is paid once)."""
        return await self.dev.time_one_pass(steps)

    async def gpu_ns(self, steps) -> list[float]:
        """Each step's GPU time from timestamp queries (GpuDevice.run's profiling: one
        timed pass per dispatch)."""
        _, us = await self.dev.run(Recording(list(steps)), [], None, profile=True)
        return [t * 1e3 for t in us]


async def measure(timer, steps, nbytes: int) -> dict:
    """Median per-op time of ``steps`` (one op's dispatches, in order): warm-up, then wall
    over many passes in one submit and (where available) GPU timestamps of each pass,
    summed over the op's passes (the gaps between an op's passes are not counted there)."""
    steps = list(steps) if isinstance(steps, (list, tuple)) else [steps]
    one = await timer.wall(steps)  # warm-up (pipeline JIT on software adapters)
    one = min(one, await timer.wall(steps * 3) / 3)
    iters = int(max(5, min(1000, TARGET_S / max(one, 1e-7))))
    walls = [await timer.wall(steps * iters) / iters for _ in range(3)]
    wall_us = statistics.median(walls) * 1e6
    rec = {"wall_us": wall_us, "iters": iters, "dispatches": len(steps)}
    if timer.timestamps:
        n = min(iters, 500)
        ns = await timer.gpu_ns(steps * n)
        k = len(steps)
        rec["ts_us"] = statistics.median(sum(ns[i:i + k]) for i in range(0, len(ns), k)) / 1e3
        # the same op back to back in one timed pass: per-op time without the per-pass floor
        rec["pass_us"] = statistics.median([await timer.pass_ns(steps * n) / n
                                            for _ in range(3)]) / 1e3
    rec["us"] = rec.get("ts_us", wall_us)
    rec["gbps"] = nbytes / (rec["us"] * 1e-6) / 1e9
    rec["timing"] = "timestamps" if "ts_us" in rec else "wall"
    return rec


# --- building the work ------------------------------------------------------------------
# the copy kernel ours is measured against (shipped with the shaders, so the page has it)
COPY_WGSL = resources.files("pte_webgpu.shaders").joinpath("bench_copy.wgsl").read_text()
COPY_VARIANTS = {"copy4-256": (256, 1), "copy4-64x16": (64, 16)}


async def copy_records(device, timer, src, dst, nbytes: int) -> list[dict]:
    """The copy kernel (each of COPY_VARIANTS) reading ``nbytes`` of ``src`` (a multiple of
    16) into ``dst``: what the benches set a kernel's bandwidth against."""
    out = []
    for name, (wg, per) in COPY_VARIANTS.items():
        pipe = await device.create_pipeline(COPY_WGSL, "main", {"wg_size": wg, "per": per}, name)
        group = device.bind_group(pipe, [(0, src, nbytes), (1, dst, nbytes)], name)
        grid = fold_grid(-(-nbytes // (16 * wg * per)),
                         device.limit("maxComputeWorkgroupsPerDimension", 65535))
        rec = await measure(timer, Dispatch(pipe, group, grid, name), 2 * nbytes)
        out.append(dict(rec, impl="copy", variant=name))
    return out


def _floats(n: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    return struct.pack(f"<{n}f", *(rnd.uniform(-2.0, 2.0) for _ in range(n)))


async def bench_shape(device, rows: int, width: int, variants=None, copies=True,
                      forced_env: str = rms_norm.VARIANTS.env_var) -> list[dict]:
    timer = Timer(device)
    n = rows * width
    f32 = dtypes.FLOAT32
    graph = Graph(values=[TensorValue(f32, (rows, width)), TensorValue(f32, (width,)),
                          Scalar("double", EPS), TensorValue(f32, (rows, width))],
                  ops=[OpCall(OP, (0, 1, 2, 3))], input_ids=[0], output_ids=[3], constants=[])
    resources = Resources(device)
    records = []
    try:
        x = resources.buffer(4 * n, "bench x")
        w = resources.buffer(4 * width, "bench weight")
        y = resources.buffer(4 * n, "bench y")
        # Random data in 4 MB slices (Pyodide converts big byte strings slowly); repeated.
        chunk = _floats(min(n, 1 << 20), 1)
        for off in range(0, 4 * n, len(chunk)):
            device.write_buffer(x, chunk[:4 * n - off], off)
        device.write_buffer(w, _floats(width, 2))
        ctx = BuildContext(device, graph, resources, Recording(), {}, "bench")
        ctx.buffers = {0: x, 1: w, 3: y}
        op = graph.ops[0]
        nbytes = 8 * n + 4 * width
        # The variant the rule picks, built by the real handler (nothing forced).
        saved = os.environ.pop(forced_env, None)
        try:
            ctx.begin_op(0, op)
            await rms_norm.build(ctx, op)
        finally:
            if saved is not None:
                os.environ[forced_env] = saved
        chosen = ctx.kernels[-1].get("variant", "?")
        todo = [("chosen " + chosen, ctx.recording.steps[:])]
        names = variants or [v.name for v in rms_norm.candidates(device.info, width)]
        for name in names:
            v = rms_norm.parse(name).for_width(width)
            if rms_norm.supported(v, device.info):
                continue
            ctx.begin_op(0, op)
            first = len(ctx.recording.steps)
            await rms_norm.record(ctx, op, v, [(0, 0), (1, 1), (2, 3)], rows, width, EPS)
            steps = ctx.recording.steps[first:]
            todo.append((v.name, steps))
            if len(steps) > 1:  # the split form's first dispatch alone: the kernel with
                # no rescue code at all (it only flags rare rows), the floor to compare with
                todo.append((f"{v.name} 1st dispatch", steps[:1]))
        for name, steps in todo:
            rec = await measure(timer, steps, nbytes)
            part = name.endswith(" 1st dispatch")  # not a whole op: never the best variant
            records.append(dict(rec, impl="ours", variant=name, **({"part": True} if part else {})))
        if copies:
            records += await copy_records(device, timer, x, y, 4 * n)
    finally:
        resources.release()
    adapter = device.info.summary()
    for r in records:
        r.update(backend=device.info.backend, adapter=adapter, shape=[rows, width])
    return records


def chosen_variant(device, rows: int, width: int) -> dict:
    """The pipeline key of the rule's pick: for the plain-JS harness."""
    v = rms_norm.choose(device.info, rows, width)
    return {"name": v.name, "shader": v.shader, "entry": v.entry, "constants": v.constants,
            "workgroups": v.workgroups(rows), "dispatches": 2 if v.rescue == "split" else 1,
            "wgsl": rms_norm.KERNELS[v.shader].source(False)}


def run_native(cases, log) -> list[dict]:
    """Each of ``cases`` (label, async fn(device) -> records) in order on one native
    device (wgpu), each case's seconds logged; their records together."""
    import asyncio
    import time

    from pte_webgpu.gpu.native import NativeDevice

    async def go():
        device = await NativeDevice.create()
        log(f"adapter: {device.info.summary()}")
        records = []
        try:
            for label, fn in cases:
                t0 = time.perf_counter()
                records += await fn(device)
                log(f"  {label}: {time.perf_counter() - t0:.1f} s")
        finally:
            device.close()
        return records

    return asyncio.run(go())


def cuda_torch():
    """torch with a CUDA device, TF32 off (what the benches set ours beside), or None."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def cuda_us(torch, fn, target_s: float, least: int = 10) -> tuple[float, int]:
    """(median microseconds of one ``fn()`` over 3 runs of many, iterations per run), by
    CUDA events after ``least`` warm-up calls; the iterations sized to ``target_s`` a run,
    ``least`` to 100 ``least``."""
    for _ in range(least):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    torch.cuda.synchronize()
    iters = int(max(least, min(100 * least, target_s / max(start.elapsed_time(end) * 1e-3,
                                                          1e-7))))
    times = []
    for _ in range(3):
        start.record()
        for _ in range(iters):
            fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / iters)
    return statistics.median(times), iters
