"""Long fuzz run: ``python -m tests.fuzz.run --cases 100000 [--seed N] [--out DIR]``.

Prints counts per outcome, cases/s and the slowest case; exits 1 on any escape (an exception
that is not a PteError, or a case slower than 1 s), saving each such input under --out.
With ``--exec``, structurally mutated programs are loaded and executed natively instead
(exec_harness.py: escapes also SLOW, MEMORY, HANG and CRASH), in a supervised worker.
With ``--gguf``, mutants of small real GGUF files go through the GGUF reader path of
``make llm`` (gguf_harness.py: escapes also SLOW, HANG and MEMORY).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

from .harness import case_rng, run_case
from .mutations import load_targets

ROOT = Path(__file__).resolve().parents[2]


def save(out: Path, seed: int, index: int, r) -> Path:
    case = out / f"seed{seed}-case{index}"
    case.mkdir(parents=True, exist_ok=True)
    (case / "input.pte").write_bytes(r.pte)
    for name, data in r.files:
        (case / name).write_bytes(bytes(data))
    (case / "README.txt").write_text(
        f"{r.description}\noutcome: {r.outcome} ({r.seconds:.4f} s)\n"
        f"replay: python -m tests.fuzz.run --seed {seed} --start {index} --cases 1\n\n{r.detail}")
    return case


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=100_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start", type=int, default=0, help="first case index (to replay one)")
    p.add_argument("--out", type=Path, default=ROOT / "build" / "fuzz-crashes")
    p.add_argument("--exec", action="store_true",
                   help="load and execute structurally mutated programs natively")
    p.add_argument("--gguf", action="store_true", help="mutated GGUF files through the GGUF reader")
    args = p.parse_args(argv)
    if args.exec:
        return _exec(args)
    if args.gguf:
        return _gguf(args)

    targets = load_targets()
    outcomes: Counter = Counter()
    slowest = None
    escapes = []
    t0 = time.perf_counter()
    for i in range(args.start, args.start + args.cases):
        r = run_case(case_rng(args.seed, i), targets[i % len(targets)])
        outcomes[r.outcome] += 1
        if slowest is None or r.seconds > slowest[0]:
            slowest = (r.seconds, i, r.description, r.outcome)
        if r.escaped:
            path = save(args.out, args.seed, i, r)
            escapes.append((i, r))
            print(f"ESCAPE case {i} ({r.description}): {r.outcome} -> {path}", file=sys.stderr)
        done = i - args.start + 1
        if done % 20_000 == 0:
            print(f"  ... {done} cases, {done / (time.perf_counter() - t0):.0f} cases/s",
                  file=sys.stderr)
    elapsed = time.perf_counter() - t0
    print(f"fuzz: {args.cases} cases (seed {args.seed}) in {elapsed:.1f} s "
          f"= {args.cases / elapsed:.0f} cases/s")
    for outcome, n in outcomes.most_common():
        print(f"  {outcome:<24} {n:>8}  ({100 * n / args.cases:.1f}%)")
    if slowest:
        s, i, desc, outcome = slowest
        print(f"slowest: case {i} {s * 1000:.2f} ms ({desc}; {outcome})")
    if escapes:
        print(f"FAILED: {len(escapes)} escapes, inputs saved under {args.out}")
        return 1
    print("no escapes")
    return 0


def _exec(args) -> int:
    from .exec_supervisor import run

    outcomes, escapes, elapsed = run(args.seed, args.start, args.cases, args.out,
                                     log=lambda m: print(m, file=sys.stderr, flush=True))
    print(f"fuzz --exec: {args.cases} cases (seed {args.seed}) in {elapsed:.1f} s "
          f"= {args.cases / elapsed:.1f} cases/s")
    for outcome, n in outcomes.most_common():
        print(f"  {outcome:<24} {n:>8}  ({100 * n / args.cases:.1f}%)")
    if escapes:
        print(f"FAILED: {len(escapes)} escapes, inputs saved under {args.out}")
        return 1
    print("no escapes")
    return 0


def _gguf(args) -> int:
    import resource

    from . import gguf_harness

    # a blow-up past the checks must end this process with MemoryError, not the machine
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (4 << 30 if hard == resource.RLIM_INFINITY else
                                            min(4 << 30, hard), hard))
    seeds = gguf_harness.load_seeds()
    runner = gguf_harness.Runner()
    outcomes: Counter = Counter()
    escapes, slowest, heaviest = 0, (0.0, -1), (0.0, -1)
    t0 = time.perf_counter()
    for i in range(args.start, args.start + args.cases):
        description, data = gguf_harness.mutate(gguf_harness.case_rng(args.seed, i), seeds[i % len(seeds)])
        r = runner.run(description, data)
        outcomes[r.outcome] += 1
        slowest = max(slowest, (r.seconds, i))
        heaviest = max(heaviest, (r.peak_bytes / max(len(data), 1), i))
        if r.escaped:
            escapes += 1
            case = args.out / f"gguf-seed{args.seed}-case{i}"
            case.mkdir(parents=True, exist_ok=True)
            (case / "input.gguf").write_bytes(data)
            (case / "README.txt").write_text(
                f"{description}\noutcome: {r.outcome} ({r.seconds:.4f} s, peak {r.peak_bytes} B)\n"
                f"replay: python -m tests.fuzz.run --gguf --seed {args.seed} --start {i} --cases 1\n\n"
                f"{r.detail}")
            print(f"ESCAPE case {i} ({description}): {r.outcome} -> {case}", file=sys.stderr)
        done = i - args.start + 1
        if done % 10_000 == 0:
            print(f"  ... {done} cases, {done / (time.perf_counter() - t0):.0f} cases/s", file=sys.stderr)
    runner.close()
    elapsed = time.perf_counter() - t0
    print(f"fuzz --gguf: {args.cases} cases (seed {args.seed}) in {elapsed:.1f} s "
          f"= {args.cases / elapsed:.0f} cases/s")
    for outcome, n in outcomes.most_common():
        print(f"  {outcome:<24} {n:>8}  ({100 * n / args.cases:.1f}%)")
    print(f"slowest: case {slowest[1]} {slowest[0] * 1000:.1f} ms CPU; largest traced peak: case "
          f"{heaviest[1]} {heaviest[0]:.1f}x its file (bound {gguf_harness.MEMORY_FACTOR}x + "
          f"{gguf_harness.MEMORY_FLOOR >> 20} MiB)")
    if escapes:
        print(f"FAILED: {escapes} escapes, inputs saved under {args.out}")
        return 1
    print("no escapes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
