"""Parse-time benchmark of the readers: ``python bench/bench_parse.py [--runs N]``.

Times ``formats.open_program`` (program + every Vulkan delegate graph + .ptd files) on the
largest fixtures and prints the median in ms, after a warm-up.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "pkg"))  # works without `pip install -e .` too

from pte_webgpu import formats  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
CASES = ("block_1x8x64", "block_extdata_1x8x64")


def bench(name: str, runs: int, warmup: int) -> dict:
    summary = json.loads((FIXTURES / f"{name}.json").read_text())
    pte = (FIXTURES / f"{name}.pte").read_bytes()
    files = [(Path(p).name, (FIXTURES / p).read_bytes()) for p in summary["ptd_files"]]
    for _ in range(warmup):
        formats.open_program(pte, files)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        formats.open_program(pte, files)
        times.append(time.perf_counter() - t0)
    ms = sorted(t * 1000 for t in times)
    return {"name": name, "pte_bytes": len(pte), "ptd_files": len(files),
            "ptd_bytes": sum(len(d) for _, d in files), "runs": runs,
            "median_ms": statistics.median(ms), "p10_ms": ms[len(ms) // 10],
            "p90_ms": ms[len(ms) * 9 // 10], "min_ms": ms[0]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=500)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    results = [bench(name, args.runs, args.warmup) for name in CASES]
    if args.json:
        print(json.dumps(results, indent=1))
        return 0
    print(f"open_program parse time, median of {args.runs} runs after {args.warmup} warm-up "
          f"(Python {sys.version.split()[0]})")
    for r in results:
        extra = f" + {r['ptd_files']} .ptd ({r['ptd_bytes']} bytes)" if r["ptd_files"] else ""
        print(f"  {r['name']:<24} {r['pte_bytes']:>6} bytes{extra}: median {r['median_ms']:.3f} ms"
              f" (p10 {r['p10_ms']:.3f}, p90 {r['p90_ms']:.3f}, min {r['min_ms']:.3f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
