"""Supervises load-and-execute fuzzing: a worker process runs the cases; a crash
(wgpu-native aborts the process on some errors) or a case that hangs past
HANG_S is recorded as an escape, the worker restarted after it."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

HANG_S = 60.0


def _worker(seed: int, start: int, end: int, out: Path) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen(
        [sys.executable, "-m", "tests.fuzz.exec_worker", "--seed", str(seed), "--start",
         str(start), "--end", str(end), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
        cwd=Path(__file__).resolve().parents[2])


def run(seed: int, start: int, cases: int, out: Path, log=print) -> tuple[Counter, list, float]:
    """(outcomes, escapes as (index, outcome, description, detail), seconds)."""
    outcomes: Counter = Counter()
    escapes = []
    end = start + cases
    at = start
    t0 = time.perf_counter()
    while at < end:
        proc = _worker(seed, at, end, out)
        current, finished = at, False
        buffer = ""
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], HANG_S)
            if not ready:
                proc.kill()
                proc.wait()
                outcomes["HANG"] += 1
                escapes.append((current, "HANG", "", f"no progress for {HANG_S} s"))
                log(f"HANG case {current}")
                at = current + 1
                break
            line = proc.stdout.readline()
            if not line:  # the worker died
                code = proc.wait()
                if current >= end or (finished and current + 1 >= end):
                    at = end
                    break
                outcomes["CRASH"] += 1
                escapes.append((current, "CRASH", "", f"worker exited with {code}"))
                log(f"CRASH case {current} (exit {code})")
                at = current + 1
                break
            buffer = line
            record = json.loads(buffer)
            current = record["i"]
            if record.get("starting"):
                finished = False
                continue
            finished = True
            outcomes[record["outcome"]] += 1
            if record.get("saved"):
                escapes.append((current, record["outcome"], record["desc"],
                                record.get("detail", "")))
                log(f"ESCAPE case {current} ({record['desc']}): {record['outcome']} -> "
                    f"{record['saved']}")
            done = sum(outcomes.values())
            if done % 5000 == 0:
                log(f"  ... {done} cases, {done / (time.perf_counter() - t0):.1f} cases/s")
            if current + 1 >= end:
                proc.wait()
                at = end
                break
    return outcomes, escapes, time.perf_counter() - t0
