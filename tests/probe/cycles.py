"""RSS over load/close cycles: ``python -m tests.probe.cycles --cycles 1000``.

Prints the resident set size after a warm-up and at the end, with and without an
execute per cycle; the suite runs fewer cycles (test_lifetime.py).
"""

from __future__ import annotations

import argparse
import asyncio
import os

import numpy as np
import pte_webgpu

from .crafts import fixture_path

FIXTURE = "block_1x8x64"
WARMUP = 20


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


async def cycles(rt, n: int, execute: bool, fixture: str = FIXTURE) -> tuple[float, float]:
    """(RSS after the warm-up, RSS after ``n`` more cycles) in MB."""
    path = fixture_path(fixture)
    pte = path.read_bytes()
    ref = np.load(path.with_suffix(".npz"))
    ins = [ref[k] for k in sorted(ref.files) if k.startswith("in")]
    start = 0.0
    for i in range(WARMUP + n):
        if i == WARMUP:
            start = rss_mb()
        program = await rt.load_program(pte)
        if execute:
            await program.load_method().execute(ins)
        program.close()
    return start, rss_mb()


async def main(n: int) -> None:
    rt = await pte_webgpu.Runtime.create("native")
    for execute in (False, True):
        start, end = await cycles(rt, n, execute)
        print(f"{n} load/close cycles of {FIXTURE} {'with' if execute else 'without'} "
              f"execute: RSS {start:.0f} MB -> {end:.0f} MB ({end - start:+.1f} MB)")
    rt.close()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cycles", type=int, default=1000)
    asyncio.run(main(p.parse_args().cycles))
