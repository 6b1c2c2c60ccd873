"""Export a Llama-family GGUF to Vulkan-delegated .pte programs plus its tokenizer.

    python -m pte_webgpu.export.build_llm MODEL.gguf --out-dir build/llm --name NAME
        [--max-seq-len 1024] [--max-context-len N] [--variants fp32,fp16]

Writes NAME.pte (fp32), NAME-fp16.pte (Vulkan ``force_fp16``), NAME.tokenizer.json and
NAME.export.json (hyperparameters, sizes, export time and peak RSS).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import resource
import sys
import time
from pathlib import Path

from ..errors import PteError
from . import gguf_llama, llama_pte, tokenizer_json


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def export(gguf_path: Path, out_dir: Path, name: str, max_seq_len: int, max_context_len: int,
           variants: list[str]) -> dict:
    start = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    reader = gguf_llama.open_gguf(gguf_path)
    hp = gguf_llama.read_hparams(reader)
    if max_context_len > hp.context_length:
        print(f"note: context {max_context_len} exceeds the model's trained {hp.context_length}",
              file=sys.stderr)

    tok = tokenizer_json.tokenizer_dict(reader)
    if len(tok["vocab"]) != hp.vocab_size:
        raise PteError(f"tokenizer has {len(tok['vocab'])} tokens but the model's vocab is {hp.vocab_size}")
    (out_dir / f"{name}.tokenizer.json").write_text(json.dumps(tok, ensure_ascii=False))

    weights = gguf_llama.state_dict(reader, hp)
    model = llama_pte.build_model(hp, weights, max_seq_len, max_context_len)
    del weights
    loaded = time.monotonic()
    files = {}
    for force_fp16, program in llama_pte.lower(model, hp, max_seq_len, max_context_len,
                                               [v == "fp16" for v in variants]):
        path = out_dir / (f"{name}-fp16.pte" if force_fp16 else f"{name}.pte")
        path.write_bytes(program.buffer)
        files["fp16" if force_fp16 else "fp32"] = {"file": path.name, "bytes": path.stat().st_size,
                                                   "at_s": round(time.monotonic() - start, 1)}
        print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
    report = {
        "gguf": Path(gguf_path).name,
        "hparams": dataclasses.asdict(hp),
        "max_seq_len": max_seq_len,
        "max_context_len": max_context_len,
        "programs": files,
        "tokenizer": f"{name}.tokenizer.json",
        "load_s": round(loaded - start, 1),
        "export_s": round(time.monotonic() - start, 1),
        "peak_rss_mb": round(peak_rss_mb()),
    }
    (out_dir / f"{name}.export.json").write_text(json.dumps(report, indent=1))
    return report


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m pte_webgpu.export.build_llm",
                                 description=__doc__.split("\n")[0])
    ap.add_argument("gguf", type=Path)
    ap.add_argument("--out-dir", type=Path, default=Path("build/llm"))
    ap.add_argument("--name", required=True)
    ap.add_argument("--max-seq-len", type=int, default=1024,
                    help="longest prefill chunk is this minus 1 (ExecuTorch's dynamic-shape limit)")
    ap.add_argument("--max-context-len", type=int, default=None,
                    help="KV cache length (default: max-seq-len)")
    ap.add_argument("--variants", default="fp32,fp16")
    args = ap.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if not variants or set(variants) - {"fp32", "fp16"}:
        ap.error("--variants takes fp32 and/or fp16")
    ctx = args.max_context_len or args.max_seq_len
    if args.max_seq_len < 2 or ctx < args.max_seq_len:
        ap.error("need 2 <= max-seq-len <= max-context-len")
    try:
        report = export(args.gguf, args.out_dir, args.name, args.max_seq_len, ctx, variants)
    except PteError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
