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
import statistics
import struct
import time

from pte_webgpu import dtypes
from pte_webgpu.gpu.interface import Dispatch, Recording, fold_grid
from pte_webgpu.graph import Graph, OpCall, Scalar, TensorValue
from pte_webgpu.ops import rms_norm
from pte_webgpu.runtime.build import BuildContext, Resources

OP = "et_vk.rms_norm.default"
EPS = 1e-6
TARGET_S = 0.25  # wall time aimed at per measurement (after warm-up)


# --- timing, per backend -------------------------------------------------------------------
class NativeTimer:
    def __init__(self, dev):
        self.dev, self.d = dev, dev.device
        self.wgpu = dev.wgpu
        self.timestamps = "timestamp-query" in dev.info.features

    def _encode(self, steps, ts_set=None):
        enc = self.d.create_command_encoder()
        for i, step in enumerate(steps):
            kw = {}
            if ts_set is not None:
                kw["timestamp_writes"] = {"query_set": ts_set, "beginning_of_pass_write_index": 2 * i,
                                          "end_of_pass_write_index": 2 * i + 1}
            p = enc.begin_compute_pass(**kw)
            p.set_pipeline(step.pipeline)
            p.set_bind_group(0, step.bind_group)
            p.dispatch_workgroups(*step.grid)
            p.end()
        return enc

    async def wall(self, steps) -> float:
        """Seconds for ``steps`` submitted at once, until the queue is done."""
        t0 = time.perf_counter()
        self.d.queue.submit([self._encode(steps).finish()])
        self._wait()
        return time.perf_counter() - t0

    def _wait(self):
        # A read of a tiny buffer waits for the queue (on_submitted_work_done_sync is broken
        # in wgpu 0.32.0).
        if not hasattr(self, "_probe"):
            self._probe = self.d.create_buffer(size=16, usage=self.wgpu.BufferUsage.COPY_SRC |
                                               self.wgpu.BufferUsage.COPY_DST)
        self.d.queue.read_buffer(self._probe)

    async def gpu_ns(self, steps) -> list[float]:
        n = len(steps)
        qs = self.d.create_query_set(type="timestamp", count=2 * n)
        U = self.wgpu.BufferUsage
        res = self.d.create_buffer(size=16 * n, usage=U.QUERY_RESOLVE | U.COPY_SRC)
        enc = self._encode(steps, qs)
        enc.resolve_query_set(qs, 0, 2 * n, res, 0)
        self.d.queue.submit([enc.finish()])
        raw = self.d.queue.read_buffer(res)
        vals = struct.unpack(f"<{2 * n}Q", bytes(raw))
        res.destroy()
        qs.destroy()
        return [float(vals[2 * i + 1] - vals[2 * i]) for i in range(n)]


class BrowserTimer:
    def __init__(self, dev):
        import js
        from pyodide.ffi import to_js

        self.js, self.dev, self.d = js, dev, dev.device
        self.obj = lambda v: to_js(v, dict_converter=js.Object.fromEntries)
        self.timestamps = "timestamp-query" in dev.info.features

    def _encode(self, steps, ts_set=None):
        enc = self.d.createCommandEncoder()
        for i, step in enumerate(steps):
            desc = {}
            if ts_set is not None:
                desc = {"timestampWrites": {"querySet": ts_set, "beginningOfPassWriteIndex": 2 * i,
                                            "endOfPassWriteIndex": 2 * i + 1}}
            p = enc.beginComputePass(self.obj(desc))
            p.setPipeline(step.pipeline)
            p.setBindGroup(0, step.bind_group)
            p.dispatchWorkgroups(*step.grid)
            p.end()
        return enc

    async def wall(self, steps) -> float:
        t0 = self.js.performance.now()
        self.d.queue.submit(self.obj([self._encode(steps).finish()]))
        await self.d.queue.onSubmittedWorkDone()
        return (self.js.performance.now() - t0) / 1e3

    async def gpu_ns(self, steps) -> list[float]:
        js, n = self.js, len(steps)
        U = js.GPUBufferUsage
        qs = self.d.createQuerySet(self.obj({"type": "timestamp", "count": 2 * n}))
        res = self.d.createBuffer(self.obj({"size": 16 * n, "usage": U.QUERY_RESOLVE | U.COPY_SRC}))
        out = self.d.createBuffer(self.obj({"size": 16 * n, "usage": U.MAP_READ | U.COPY_DST}))
        enc = self._encode(steps, qs)
        enc.resolveQuerySet(qs, 0, 2 * n, res, 0)
        enc.copyBufferToBuffer(res, 0, out, 0, 16 * n)
        self.d.queue.submit(self.obj([enc.finish()]))
        await out.mapAsync(js.GPUMapMode.READ)
        vals = js.BigUint64Array.new(out.getMappedRange()).to_py()
        vals = [int(v) for v in vals]
        out.unmap()
        for b in (res, out, qs):
            b.destroy()
        return [float(vals[2 * i + 1] - vals[2 * i]) for i in range(n)]


async def measure(timer, step, nbytes: int) -> dict:
    """Median per-op time of ``step``: warm-up, then wall over many passes in one submit
    and (where available) GPU timestamps of each pass."""
    one = await timer.wall([step])  # warm-up (pipeline JIT on software adapters)
    one = min(one, await timer.wall([step] * 3) / 3)
    iters = int(max(5, min(1000, TARGET_S / max(one, 1e-7))))
    walls = [await timer.wall([step] * iters) / iters for _ in range(3)]
    wall_us = statistics.median(walls) * 1e6
    rec = {"wall_us": wall_us, "iters": iters}
    if timer.timestamps:
        n = min(iters, 500)
        ns = await timer.gpu_ns([step] * n)
        rec["ts_us"] = statistics.median(ns) / 1e3
    rec["us"] = rec.get("ts_us", wall_us)
    rec["gbps"] = nbytes / (rec["us"] * 1e-6) / 1e9
    rec["timing"] = "timestamps" if "ts_us" in rec else "wall"
    return rec


# --- building the work ------------------------------------------------------------------
COPY_WGSL = """
override wg_size: u32 = 256;
override per: u32 = 1;   // vec4s per invocation, wg_size apart
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(wg_size)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let first = (wid.x + wid.y * groups.x) * wg_size * per + li;
  let n = arrayLength(&dst);
  for (var k = 0u; k < per; k++) {
    let i = first + k * wg_size;
    if (i < n) { dst[i] = src[i]; }
  }
}
"""
COPY_VARIANTS = {"copy4-256": (256, 1), "copy4-64x16": (64, 16)}


def _floats(n: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    return struct.pack(f"<{n}f", *(rnd.uniform(-2.0, 2.0) for _ in range(n)))


async def bench_shape(device, rows: int, width: int, variants=None, copies=True,
                      forced_env: str = rms_norm.ENV_VAR) -> list[dict]:
    timer = BrowserTimer(device) if device.info.backend == "browser" else NativeTimer(device)
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
        todo = [("chosen " + chosen, ctx.recording.steps[-1])]
        names = variants or [v.name for v in rms_norm.candidates(device.info, width)]
        for name in names:
            v = rms_norm.parse(name).for_width(width)
            if rms_norm.supported(v, device.info):
                continue
            ctx.begin_op(0, op)
            await rms_norm.record(ctx, op, v, [(0, 0), (1, 1), (2, 3)], rows, width, EPS)
            todo.append((v.name, ctx.recording.steps[-1]))
        for name, step in todo:
            rec = await measure(timer, step, nbytes)
            records.append(dict(rec, impl="ours", variant=name))
        if copies:
            for name, (wg, per) in COPY_VARIANTS.items():
                pipe = await device.create_pipeline(COPY_WGSL, "main", {"wg_size": wg, "per": per},
                                                    name)
                group = device.bind_group(pipe, [(0, x, 4 * n), (1, y, 4 * n)], name)
                grid = fold_grid(-(-n // (4 * wg * per)),
                                 device.limit("maxComputeWorkgroupsPerDimension", 65535))
                rec = await measure(timer, Dispatch(pipe, group, grid, name), 8 * n)
                records.append(dict(rec, impl="copy", variant=name))
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
            "workgroups": v.workgroups(rows)}
