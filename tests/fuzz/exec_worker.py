"""Runs load-and-execute fuzz cases [start, end) and reports one JSON line per case.

Started by ``python -m tests.fuzz.run --exec`` (the supervisor), which restarts it
after a crash or a hang. Escapes are saved here, where the bytes are at hand.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path

import pte_webgpu

from .exec_harness import ALLOC_CAP, load_bases, run_case
from .harness import case_rng


def save(out: Path, seed: int, index: int, r) -> Path:
    case = out / f"exec-seed{seed}-case{index}"
    case.mkdir(parents=True, exist_ok=True)
    (case / "input.pte").write_bytes(r.pte)
    for name, data in r.files:
        (case / name).write_bytes(bytes(data))
    (case / "README.txt").write_text(
        f"{r.description}\noutcome: {r.outcome} ({r.seconds:.4f} s)\n"
        f"replay: python -m tests.fuzz.run --exec --seed {seed} --start {index} --cases 1\n\n"
        f"{r.detail}")
    return case


async def main(seed: int, start: int, end: int, out: Path) -> None:
    bases = load_bases()
    rt = await pte_webgpu.Runtime.create("native", {"max_alloc_bytes": ALLOC_CAP})
    abort_at = int(os.environ.get("PTE_FUZZ_ABORT_AT", "-1"))  # tests of the supervisor
    for i in range(start, end):
        print(json.dumps({"i": i, "starting": True}), flush=True)
        if i == abort_at:
            os.abort()
        r = await run_case(rt, case_rng(seed, i), bases[i % len(bases)])
        line = {"i": i, "outcome": r.outcome, "s": round(r.seconds, 5), "desc": r.description}
        if r.escaped:
            line["saved"] = str(save(out, seed, i, r))
            line["detail"] = r.detail[-3000:]
        print(json.dumps(line), flush=True)
    rt.close()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--start", type=int, required=True)
    p.add_argument("--end", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args()
    asyncio.run(main(a.seed, a.start, a.end, a.out))
    sys.exit(0)
