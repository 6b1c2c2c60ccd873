"""One load-and-execute fuzz case, natively, within a time and memory budget.

A case mutates one real fixture structurally (exec_mutations.py), loads it on the
native backend with a 256 MiB allocation cap, executes it once on seeded inputs
and closes it. It must succeed or raise a PteError; anything else is an escape.
A case slower than TIME_LIMIT_S is SLOW; one that raises the process's peak
memory by more than MEMORY_LIMIT_MB is MEMORY. Hangs and crashes (wgpu-native
aborts the process on some errors) are caught by the supervisor in run.py, which
runs the cases in a worker process.
"""

from __future__ import annotations

import json
import random
import resource
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from pte_webgpu.errors import PteError

from .exec_mutations import mutate
from .mutations import FIXTURES
from .ptefile import Pte

TIME_LIMIT_S = 5.0
MEMORY_LIMIT_MB = 512
ALLOC_CAP = 256 << 20  # the Runtime's max_alloc_bytes while fuzzing


@dataclass
class Base:
    name: str
    pte: Pte
    ptds: list


@dataclass
class ExecResult:
    outcome: str  # "ok", a PteError subclass name, "ESCAPE:<type>", "SLOW" or "MEMORY"
    seconds: float
    description: str
    pte: bytes
    files: list
    detail: str = ""

    @property
    def escaped(self) -> bool:
        return self.outcome.startswith(("ESCAPE", "SLOW", "MEMORY"))


def load_bases() -> list[Base]:
    """Every fixture the runtime runs (main and extra), parsed into editable trees."""
    out = []
    for path in sorted(FIXTURES.glob("*.pte")) + sorted((FIXTURES / "extra").glob("*.pte")):
        summary = json.loads(path.with_suffix(".json").read_text())
        if "cos" in path.stem:
            continue  # cos/sin are not implemented: the unmutated program is refused
        ptds = [(Path(p).name, (path.parent / p).read_bytes()) for p in summary["ptd_files"]]
        out.append(Base(path.stem, Pte.parse(path.read_bytes()), ptds))
    return out


def _inputs(method, rng: random.Random) -> list:
    import numpy as np

    gen = np.random.default_rng(rng.getrandbits(32))
    out = []
    for shape, dtype in method.input_specs():
        if dtype.startswith("int"):
            out.append(gen.integers(-2, 8, size=shape).astype(dtype))
        else:
            out.append(gen.standard_normal(shape).astype(dtype))
    return out


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run_case(rt, rng: random.Random, base: Base) -> ExecResult:
    description, pte = mutate(rng, base.pte)
    description = f"{base.name} {description}"
    peak = _peak_mb()
    t0 = time.perf_counter()
    detail = ""
    program = None
    try:
        program = await rt.load_program(pte, base.ptds)
        method = program.load_method((program.method_names or ["forward"])[0])
        await method.execute(_inputs(method, rng))
        outcome = "ok"
    except PteError as e:
        outcome, detail = type(e).__name__, str(e)[:500]
    except Exception as e:  # noqa: BLE001 - anything else is an escape
        outcome, detail = f"ESCAPE:{type(e).__name__}", traceback.format_exc()
    finally:
        if program is not None:
            program.close()
    seconds = time.perf_counter() - t0
    grown = _peak_mb() - peak
    if not outcome.startswith("ESCAPE"):
        if seconds > TIME_LIMIT_S:
            outcome, detail = "SLOW", f"{seconds:.2f} s (limit {TIME_LIMIT_S} s); {outcome}"
        elif grown > MEMORY_LIMIT_MB:
            outcome, detail = "MEMORY", f"peak grew {grown:.0f} MB; {outcome}"
    return ExecResult(outcome, seconds, description, pte, base.ptds, detail)
