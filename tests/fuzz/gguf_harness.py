"""GGUF fuzz cases: mutants of the small real GGUFs of gguf_seed.py through the reader path
``make llm`` uses (gguf_llama.open_gguf, read_hparams, tokenizer_json.tokenizer_dict,
gguf_llama.arrays: every tensor dequantized). A case must end in "ok" or a PteError; any
other exception is an escape, and so is a case slower than TIME_LIMIT_S (HANG when the
alarm at HANG_LIMIT_S interrupts it) or one whose traced allocations (tracemalloc sees
numpy's) peak above MEMORY_FACTOR x the file's size + MEMORY_FLOOR. Times are the
process's CPU time (a loop spends it; a machine shared with other jobs does not)."""

from __future__ import annotations

import os
import random
import signal
import tempfile
import time
import tracemalloc
import traceback
from dataclasses import dataclass
from pathlib import Path

from pte_webgpu.errors import PteError

from . import gguf_seed

TIME_LIMIT_S = 1.0
HANG_LIMIT_S = 5.0
MEMORY_FACTOR = 16
MEMORY_FLOOR = 2 << 20
_INTERESTING = [0, 1, 2, 3, 4, 7, 8, 9, 12, 31, 32, 255, 256, 0x7FFF, 0xFFFF, 0x7FFFFFFF,
                0x80000000, 0xFFFFFFFF, 1 << 32, (1 << 63) - 1, 1 << 63, (1 << 64) - 1]


@dataclass
class Seed:
    name: str
    data: bytes
    fields: list  # (offset, size) of every fixed-size number in the header: counts, types...
    header_end: int


@dataclass
class Result:
    outcome: str  # "ok", a PteError subclass name, or ESCAPE:<exception> / SLOW / HANG / MEMORY
    seconds: float
    peak_bytes: int
    description: str
    data: bytes
    detail: str = ""

    @property
    def escaped(self) -> bool:
        return self.outcome.startswith(("ESCAPE", "SLOW", "HANG", "MEMORY"))


class _Hang(BaseException):
    pass


def _numeric_fields(path) -> tuple[list, int]:
    """Offsets and sizes of the header's numbers, from gguf's own reader of the seed."""
    import gguf

    reader = gguf.GGUFReader(str(path))
    out = []
    for f in [*reader.fields.values(), *(t.field for t in reader.tensors)]:
        at = f.offset
        for part in f.parts:
            if part.nbytes in (1, 2, 4, 8) and part.size == 1:
                out.append((at, int(part.nbytes)))
            at += int(part.nbytes)
    return sorted(set(out)), int(reader.data_offset)


def load_seeds(folder: Path | None = None) -> list[Seed]:
    folder = Path(folder or tempfile.mkdtemp(prefix="gguf-seeds-"))
    seeds = []
    for variant in gguf_seed.VARIANTS:
        path = folder / f"{variant}.gguf"
        gguf_seed.write(path, variant)
        fields, header_end = _numeric_fields(path)
        seeds.append(Seed(variant, path.read_bytes(), fields, header_end))
    return seeds


def mutate(rng: random.Random, seed: Seed) -> tuple[str, bytes]:
    data = bytearray(seed.data)
    kinds = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        kind = rng.choice(["number", "number", "number", "flip", "flip", "byte", "truncate",
                           "splice", "delete", "insert"])
        kinds.append(kind)
        head = min(seed.header_end, len(data))
        if kind == "number" and seed.fields:
            at, size = rng.choice(seed.fields)
            if at + size > len(data):
                continue
            old = int.from_bytes(data[at:at + size], "little")
            value = rng.choice([rng.choice(_INTERESTING), old + rng.randint(-3, 3),
                                old * rng.choice([2, 16, 1 << 20]), len(data) + rng.randint(-64, 64)])
            data[at:at + size] = (value % (1 << (8 * size))).to_bytes(size, "little")
        elif kind == "flip":
            # mostly in the header, where the structure is; sometimes in the tensor data
            at = rng.randrange(head) if rng.random() < 0.9 or head == len(data) else rng.randrange(len(data))
            data[at] ^= 1 << rng.randrange(8)
        elif kind == "byte":
            data[rng.randrange(head)] = rng.choice([0, 0xFF, 0x7F, 0x80, rng.randrange(256)])
        elif kind == "truncate":
            cut = rng.randrange(head + 64) if rng.random() < 0.7 else rng.randrange(len(data))
            del data[cut:]
        elif kind == "splice" and head > 16:
            a, b = sorted(rng.sample(range(head), 2))
            at = rng.randrange(head)
            data[at:at] = data[a:b][:256]
        elif kind == "delete" and head > 16:
            at = rng.randrange(head)
            del data[at:at + rng.randint(1, 16)]
        elif kind == "insert":
            at = rng.randrange(head)
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    return f"{seed.name}: {'+'.join(kinds)}", bytes(data)


def read_all(path) -> None:
    """The reader path of `make llm`, up to (not including) torch."""
    from pte_webgpu.export import gguf_llama, tokenizer_json

    reader = gguf_llama.open_gguf(path)
    hp = gguf_llama.read_hparams(reader)
    tokenizer_json.tokenizer_dict(reader)
    gguf_llama.arrays(reader, hp)


def _alarm(signum, frame):
    raise _Hang()


class Runner:
    """Runs cases one after another through one scratch folder (a new file per case: a
    file still mapped by the last case's reader is never rewritten)."""

    def __init__(self, folder: Path | None = None):
        shm = Path("/dev/shm")
        self.folder = Path(folder or tempfile.mkdtemp(prefix="gguf-fuzz-", dir=shm if shm.is_dir() else None))
        self.count = 0
        if not tracemalloc.is_tracing():
            tracemalloc.start(1)
        self._old = signal.signal(signal.SIGPROF, _alarm)

    def close(self):
        signal.signal(signal.SIGPROF, self._old)
        tracemalloc.stop()

    def run(self, description: str, data: bytes) -> Result:
        path = self.folder / f"case{self.count % 2}.gguf"
        self.count += 1
        tmp = path.with_suffix(".part")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        detail = ""
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        t0 = time.process_time()
        signal.setitimer(signal.ITIMER_PROF, HANG_LIMIT_S)
        try:
            read_all(path)
            outcome = "ok"
        except PteError as e:
            outcome, detail = type(e).__name__, str(e)
        except _Hang:
            outcome, detail = "HANG", f"interrupted after {HANG_LIMIT_S} s CPU\n{traceback.format_exc()}"
        except BaseException as e:  # noqa: BLE001 - anything else is an escape
            if isinstance(e, KeyboardInterrupt):
                raise
            outcome, detail = f"ESCAPE:{type(e).__name__}", traceback.format_exc()
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        seconds = time.process_time() - t0
        peak = tracemalloc.get_traced_memory()[1] - base
        if seconds > TIME_LIMIT_S and not outcome.startswith(("ESCAPE", "HANG")):
            outcome, detail = "SLOW", f"{seconds:.3f} s CPU (limit {TIME_LIMIT_S} s); outcome {outcome}"
        if peak > MEMORY_FACTOR * len(data) + MEMORY_FLOOR and not outcome.startswith("ESCAPE"):
            outcome, detail = "MEMORY", f"peak {peak} bytes for a {len(data)}-byte file; {outcome}"
        return Result(outcome, seconds, peak, description, data, detail)


def case_rng(seed: int, index: int) -> random.Random:
    return random.Random(seed * 1_000_003 + index)
