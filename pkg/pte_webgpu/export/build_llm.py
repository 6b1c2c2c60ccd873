"""Export a Llama-family GGUF to Vulkan-delegated .pte programs plus its tokenizer.

    python -m pte_webgpu.export.build_llm MODEL.gguf --out-dir build/llm --name NAME
        [--max-seq-len 1024] [--max-context-len N] [--variants fp32,fp16,q4]

Writes NAME.pte (fp32), NAME-fp16.pte (Vulkan ``force_fp16``), NAME-q4.pte (4-bit weights,
llama_pte.QUANTIZE["q4"]), NAME.tokenizer.json and an export record named after the first
variant's program (NAME.export.json, or NAME-q4.export.json for ``--variants q4``):
hyperparameters, sizes, export times (per program), peak RSS, the quantized weights' digest.
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

# variant -> (file suffix, force_fp16, quantization preset of llama_pte.QUANTIZE)
VARIANTS = {"fp32": ("", False, None), "fp16": ("-fp16", True, None), "q4": ("-q4", False, "q4")}


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
    loaded = time.monotonic()
    # named after the run's first program: `make llm` runs fp32,fp16 and q4 apart (make -j)
    report_path = out_dir / f"{name}{VARIANTS[variants[0]][0]}.export.json"
    files = {}
    # one model per quantization preset: quantizing changes the model in place
    for quantize in dict.fromkeys(VARIANTS[v][2] for v in variants):
        group = [v for v in variants if VARIANTS[v][2] == quantize]
        began = time.monotonic()
        model = llama_pte.source_transformed(
            llama_pte.build_model(hp, weights, max_seq_len, max_context_len), quantize)
        digest = llama_pte.weights_digest(model) if quantize else None
        lowered = llama_pte.lower(model, hp, max_seq_len, max_context_len, [VARIANTS[v][1] for v in group])
        for variant, (_, program) in zip(group, lowered):
            path = out_dir / f"{name}{VARIANTS[variant][0]}.pte"
            path.write_bytes(program.buffer)
            files[variant] = {"file": path.name, "bytes": path.stat().st_size,
                              "at_s": round(time.monotonic() - start, 1),
                              "seconds": round(time.monotonic() - began, 1),
                              **({"quantize": quantize, "weights_sha256": digest} if quantize else {})}
            began = time.monotonic()
            print(f"wrote {path} ({path.stat().st_size / 1e6:.1f} MB)", file=sys.stderr)
        del model, lowered
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
    report_path.write_text(json.dumps(report, indent=1))
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
    ap.add_argument("--variants", default="fp32,fp16,q4")
    args = ap.parse_args(argv)
    variants = [v for v in args.variants.split(",") if v]
    if not variants or set(variants) - set(VARIANTS):
        ap.error(f"--variants takes some of {','.join(VARIANTS)}")
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
