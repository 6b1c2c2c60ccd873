"""What one dispatch costs on an adapter, apart from its kernel's work (issue 24: in
Chromium a SmolLM2 decode step's time followed its dispatch count, about 15 µs a
dispatch on an H100, against about 10 natively).

A trivial kernel (one workgroup adds 1 to 64 floats) is recorded N times in ONE compute
pass, as a model's recording is, and the whole recording is submitted and awaited
(``GpuDevice.run``), for two N; the difference per added dispatch is the cost, so the
submit, the map and the pass are paid alike and drop out. Three layouts:

- ``chain``: every dispatch reads and writes one buffer, so each waits for the one
  before it (the barriers a model's dependent ops get);
- ``apart``: each writes a buffer of its own (no dependency to wait for);
- ``bound8``: as chain, with 7 read-only buffers bound beside it (a fused op binds ~8).

Where the adapter has timestamps the pass's GPU time is recorded too: wall minus GPU is
what the host (and, in a browser, its GPU process) adds. Runs natively
(``python3 bench/dispatch_cost.py``) or inside Pyodide (``await run(device)`` on the
page's device): the same code.
"""

from __future__ import annotations

import statistics
import time

from pte_webgpu.gpu.recording import Dispatch, Recording

EXTRA = 7  # the bound8 layout's read-only buffers beside the one it writes


def _wgsl(extra: int) -> str:
    reads = "".join(f"@group(0) @binding({j + 1}) var<storage, read> e{j}: array<f32>;\n"
                    for j in range(extra))
    terms = "".join(f" + e{j}[0]" for j in range(extra))
    return (f"override wg_size: u32 = 64;\n"
            f"@group(0) @binding(0) var<storage, read_write> acc: array<f32>;\n{reads}"
            f"@compute @workgroup_size(wg_size)\n"
            f"fn main(@builtin(local_invocation_index) i: u32) {{\n"
            f"  acc[i] = acc[i] + 1.0{terms};\n}}\n")


COUNTS = (32, 256)  # dispatches a recording: the cost is the slope between them
REPEATS = 15


async def _steps(device, layout: str, n: int, resources: list) -> list:
    extra = EXTRA if layout == "bound8" else 0
    pipe = await device.create_pipeline(_wgsl(extra), "main", {"wg_size": 64},
                                        f"dispatch cost {layout}")

    def buffer(label):
        buf = device.create_buffer(256, ("storage", "copy_dst", "copy_src"), label)
        device.write_buffer(buf, bytes(256))
        resources.append(buf)
        return buf
    shared = buffer("acc")
    reads = [buffer(f"read {j}") for j in range(extra)]
    steps = []
    for k in range(n):
        acc = buffer(f"acc {k}") if layout == "apart" else shared
        entries = [(0, acc, 256)] + [(j + 1, r, 256) for j, r in enumerate(reads)]
        steps.append(Dispatch(pipe, device.bind_group(pipe, entries, f"{layout} {k}"),
                              (1, 1, 1), layout))
    return steps


async def _wall_us(device, steps, repeats: int) -> float:
    recording = Recording(list(steps))
    await device.run(recording, [], None)  # warm-up (pipeline compile, first use)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        await device.run(recording, [], None)
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


async def _gpu_us(device, steps) -> float | None:
    if not device.info.traits.timestamps:
        return None
    return await device.time_one_pass(list(steps)) / 1e3


async def run(device, counts=COUNTS, repeats: int = REPEATS) -> list[dict]:
    """One record per layout: wall and (where timed) GPU µs of each count's recording, and
    the µs each added dispatch costs."""
    records = []
    for layout in ("chain", "apart", "bound8"):
        resources: list = []
        try:
            row = {"layout": layout, "counts": list(counts), "wall_us": [], "gpu_us": []}
            for n in counts:
                steps = await _steps(device, layout, n, resources)
                row["wall_us"].append(await _wall_us(device, steps, repeats))
                row["gpu_us"].append(await _gpu_us(device, steps))
            span = counts[-1] - counts[0]
            row["wall_per_dispatch_us"] = (row["wall_us"][-1] - row["wall_us"][0]) / span
            if row["gpu_us"][0] is not None:
                row["gpu_per_dispatch_us"] = (row["gpu_us"][-1] - row["gpu_us"][0]) / span
            records.append(row)
        finally:
            for buf in resources:
                device.destroy_buffer(buf)
    return records


def main() -> int:
    import asyncio
    import json
    import sys

    from pte_webgpu.gpu.native import NativeDevice

    async def go():
        device = await NativeDevice.create()
        try:
            print(f"adapter: {device.info.summary()}", file=sys.stderr)
            return await run(device)
        finally:
            device.close()
    records = asyncio.run(go())
    for r in records:
        gpu = r.get("gpu_per_dispatch_us")
        print(f"{r['layout']:>7}: {r['wall_per_dispatch_us']:.2f} µs a dispatch (wall)"
              + (f", {gpu:.2f} µs (GPU)" if gpu is not None else ""))
    print(json.dumps(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
