"""Tokenizer speed in this Python: load, encode and decode tokens per second, per family.

    PYTHONPATH=pkg python3 bench/bench_tokenizer.py [--repeat 5]

The text is tests/fixtures/tokenizers/train.txt (multilingual prose, code, numbers; 6.8 KB)
encoded as one string and line by line (the cache of pieces starts empty each round, so
repeated words are not free). Families: the fixture GGUFs, and SmolLM2's real vocabulary
when build/llm has its tokenizer JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from pte_webgpu.export.gguf_llama import open_gguf
from pte_webgpu.export.tokenizer_json import tokenizer_dict
from pte_webgpu.llm.tokenizer import Tokenizer

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures" / "tokenizers"
SMOLLM = REPO / "build" / "llm" / "smollm2-135m-instruct.tokenizer.json"


def specs() -> dict:
    out = {p.stem: tokenizer_dict(open_gguf(p)) for p in sorted(FIXTURES.glob("*.gguf"))}
    if SMOLLM.is_file():
        out["smollm2 (49152)"] = json.loads(SMOLLM.read_text(encoding="utf-8"))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    text = (FIXTURES / "train.txt").read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    print(f"{'tokenizer':18} {'load s':>7} {'tokens':>7} {'encode tok/s':>13} "
          f"{'by line tok/s':>14} {'decode tok/s':>13}")
    for name, spec in specs().items():
        t0 = time.perf_counter()
        tok = Tokenizer(spec)
        load = time.perf_counter() - t0
        best = {"whole": 1e9, "lines": 1e9, "decode": 1e9}
        for _ in range(args.repeat):
            tok._model._cache.clear()
            t0 = time.perf_counter()
            ids = tok.encode(text)
            best["whole"] = min(best["whole"], time.perf_counter() - t0)
            tok._model._cache.clear()
            t0 = time.perf_counter()
            n = sum(len(tok.encode(line)) for line in lines)
            best["lines"] = min(best["lines"], time.perf_counter() - t0)
            t0 = time.perf_counter()
            tok.decode(ids)
            best["decode"] = min(best["decode"], time.perf_counter() - t0)
        print(f"{name:18} {load:7.2f} {len(ids):7d} {len(ids) / best['whole']:13,.0f} "
              f"{n / best['lines']:14,.0f} {len(ids) / best['decode']:13,.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
