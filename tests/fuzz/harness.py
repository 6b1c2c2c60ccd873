"""One fuzz case: parse + describe must succeed or raise a PteError, quickly."""

from __future__ import annotations

import random
import time
import traceback
from dataclasses import dataclass

from pte_webgpu import formats
from pte_webgpu.app import describe
from pte_webgpu.errors import PteError

from .mutations import Target, mutate

TIME_LIMIT_S = 1.0


@dataclass
class Result:
    outcome: str  # "ok", a PteError subclass name, or "ESCAPE:<exception>" / "SLOW"
    seconds: float
    description: str
    pte: bytes
    files: list
    detail: str = ""

    @property
    def escaped(self) -> bool:
        return self.outcome.startswith(("ESCAPE", "SLOW"))


def parse(pte: bytes, files) -> None:
    program = formats.open_program(pte, files)
    report = describe.describe(program, "fuzz.pte", len(pte))
    describe.render_text(report)


def run_case(rng: random.Random, target: Target) -> Result:
    description, pte, files = mutate(rng, target)
    t0 = time.perf_counter()
    detail = ""
    try:
        parse(pte, files)
        outcome = "ok"
    except PteError as e:
        outcome = type(e).__name__
        detail = str(e)
    except BaseException as e:  # noqa: BLE001 - anything else is an escape
        if isinstance(e, KeyboardInterrupt):
            raise
        outcome = f"ESCAPE:{type(e).__name__}"
        detail = traceback.format_exc()
    seconds = time.perf_counter() - t0
    if seconds > TIME_LIMIT_S and not outcome.startswith("ESCAPE"):
        outcome, detail = "SLOW", f"{seconds:.3f} s (limit {TIME_LIMIT_S} s); outcome {outcome}"
    return Result(outcome, seconds, description, pte, files, detail)


def case_rng(seed: int, index: int) -> random.Random:
    """Independent, reproducible stream per case: (seed, index) replays one case."""
    return random.Random(seed * 1_000_003 + index)
