"""Per-op GPU time of one prefill execute of a language model at several prompt lengths
(native): where a long prefill spends its time.

    python bench/llm_prefill_profile.py MODEL.pte[.gz] OUT.json [--lengths 16,256,992]

Each length: one untimed execute, then one with ``profile=True`` (every dispatch in its
own timed pass, so small ops carry a per-pass floor), the cache reset after each. Prints
and writes {length: {"total_us", "ops": {op: us}}}; zero-weight copies
(``bench/llm_bench.py zero``) time the same.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gzip
import json
from pathlib import Path

import numpy as np
import pte_webgpu


async def profile(path: Path, lengths: list[int]) -> dict:
    data = path.read_bytes()
    pte = gzip.decompress(data) if path.suffix == ".gz" else data
    rt = await pte_webgpu.Runtime.create("native")
    try:
        method = (await rt.load_program(pte)).load_method("forward")
        out = {}
        for n in lengths:
            inputs = [np.arange(n, dtype=np.int64).reshape(1, n) % 1000, np.zeros(1, np.int64)]
            for timed in (False, True):
                await method.execute(inputs, argmax=True, profile=timed)
                method.reset()
            ops = collections.Counter()
            for row in method.last_profile:
                ops[row["op"]] += row["us"]
            out[n] = {"total_us": sum(ops.values()), "ops": dict(ops.most_common())}
            print(n, f"{out[n]['total_us'] / 1e3:.1f} ms:",
                  ", ".join(f"{k} {v / 1e3:.1f}" for k, v in ops.most_common(4)))
        return out
    finally:
        rt.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--lengths", default="16,256,992")
    args = ap.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    args.out.write_text(json.dumps(asyncio.run(profile(args.model, lengths)), indent=1))


if __name__ == "__main__":
    main()
