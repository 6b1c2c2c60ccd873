"""Long fuzz run: ``python -m tests.fuzz.run --cases 100000 [--seed N] [--out DIR]``.

Prints counts per outcome, cases/s and the slowest case; exits 1 on any escape (an exception
that is not a PteError, or a case slower than 1 s), saving each such input under --out.
With ``--exec``, structurally mutated programs are loaded and executed natively instead
(exec_harness.py: escapes also SLOW, MEMORY, HANG and CRASH), in a supervised worker.
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
    args = p.parse_args(argv)
    if args.exec:
        return _exec(args)

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


if __name__ == "__main__":
    sys.exit(main())
