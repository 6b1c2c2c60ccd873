"""Where an execute's wall time goes on the host: ``python3 bench/host_phases.py X.pte[.gz]``.

Times each phase of ``Method.execute`` over ``--runs`` executes of the program's first
input (zeros, or the npz beside it): reading and uploading the inputs, encoding the
recording, the submit, the wait for the GPU (map), and turning the bytes into outputs.
The phases are timed by wrapping the device's hooks, so the numbers are what execute
itself spends; the GPU time of the same recording (one timed pass per run of
dispatches) is printed beside them. A tool for finding host overhead, not a benchmark.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import statistics
import sys
import time
from pathlib import Path


def _read(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


class Phases:
    """Accumulated seconds per phase name, over one execute."""

    def __init__(self):
        self.now: dict[str, float] = {}

    def wrap(self, obj, name: str, phase: str, is_async: bool = False):
        inner = getattr(obj, name)

        if is_async:
            async def timed(*args, **kwargs):
                t0 = time.perf_counter()
                try:
                    return await inner(*args, **kwargs)
                finally:
                    self.now[phase] = self.now.get(phase, 0.0) + time.perf_counter() - t0
        else:
            def timed(*args, **kwargs):
                t0 = time.perf_counter()
                try:
                    return inner(*args, **kwargs)
                finally:
                    self.now[phase] = self.now.get(phase, 0.0) + time.perf_counter() - t0
        setattr(obj, name, timed)


async def main_async(path: Path, runs: int, backend: str, profile: bool = False) -> None:
    import numpy as np

    from pte_webgpu import Runtime
    from pte_webgpu.runtime.method import gpu_work

    rt = await Runtime.create(backend)
    program = await rt.load_program(_read(path))
    method = program.load_method("forward")
    inputs = [np.zeros(shape, dtype) for shape, dtype in method.input_specs()]
    device = gpu_work(method).device
    phases = Phases()
    from pte_webgpu.runtime import method as method_module

    phases.wrap(method_module, "bind", "inputs")
    phases.wrap(device, "write_buffer", "upload")
    phases.wrap(device, "_encode", "encode")
    phases.wrap(device, "_submit", "submit")
    phases.wrap(device, "_read", "wait+read", is_async=True)
    phases.wrap(method, "_read_outputs", "outputs")
    for _ in range(10):
        await method.execute(inputs)
    rows, walls = [], []
    for _ in range(runs):
        phases.now = {}
        t0 = time.perf_counter()
        await method.execute(inputs)
        walls.append(time.perf_counter() - t0)
        rows.append(dict(phases.now))
    from pte_webgpu.gpu.recording import dispatch_runs

    segments = dispatch_runs(gpu_work(method).recording.steps)
    dispatches = sum(len(run) for run in segments)
    gpu = []
    if "timestamp-query" in rt.adapter.features:
        for _ in range(5):
            gpu.append(sum([await device.time_one_pass(run) for run in segments]) / 1e6)
    wall = statistics.median(walls) * 1e3
    print(f"{path.name}: {rt.adapter.summary()}, {dispatches} dispatches")
    print(f"  wall {wall:.3f} ms (min {min(walls) * 1e3:.3f}), GPU passes "
          f"{statistics.median(gpu) if gpu else float('nan'):.3f} ms, {len(segments)} passes")
    named = 0.0
    for phase in ("inputs", "upload", "encode", "submit", "wait+read", "outputs"):
        ms = statistics.median(r.get(phase, 0.0) for r in rows) * 1e3
        named += ms
        print(f"  {phase:10s} {ms:.3f} ms")
    print(f"  {'the rest':10s} {wall - named:.3f} ms")
    if profile and gpu:
        await method.execute(inputs, profile=True)
        for row in method.last_profile:
            if row.get("dispatches"):
                info = {k: v for k, v in row.items() if k not in ("op", "us", "dispatches")}
                print(f"    {row['us']:8.1f} us {row['dispatches']:2d} x {row['op']} {info}")
    program.close()
    rt.close()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("programs", nargs="+", type=Path)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--backend", default="native")
    p.add_argument("--profile", action="store_true", help="each op's GPU time, variant")
    args = p.parse_args(argv)
    for path in args.programs:
        asyncio.run(main_async(path, args.runs, args.backend, args.profile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
