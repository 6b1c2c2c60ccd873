"""``pte-webgpu convert MODEL.gguf [--dtype fp32|fp16|q4] [--max-seq-len N] [-o OUT.pte]``.

Converts a GGUF language model (architectures llama, qwen2, qwen3, phi3, gemma2, gemma3) to a Vulkan-delegated
.pte through ExecuTorch's export path (export/convert.py). torch and executorch are the
optional extra ``[export]``: imported only when this command runs.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import PteError

_SUFFIX = {"fp32": "", "fp16": "-fp16", "q4": "-q4"}


def add_parser(sub, common, count) -> None:
    p = sub.add_parser("convert", parents=[common],
                       help="convert a GGUF language model (llama, qwen2, qwen3, phi3, gemma2, gemma3) "
                            "to a .pte")
    p.add_argument("gguf", metavar="MODEL.gguf")
    p.add_argument("--dtype", choices=tuple(_SUFFIX), default="fp32",
                   help="fp32 (default), fp16 (Vulkan force_fp16) or q4 (4-bit groups of 32: "
                   "a GGUF's Q4_0/Q4_1 linears kept as they are, others quantized; an lm head "
                   "without 4-bit blocks in 8 bits)")
    p.add_argument("--max-seq-len", type=count, default=1024,
                   help="the longest prefill is this minus 1 (default 1024)")
    p.add_argument("--max-context-len", type=count, help="KV-cache length (default: max-seq-len)")
    p.add_argument("-o", "--output", metavar="OUT.pte",
                   help="default: MODEL[-fp16|-q4].pte in the current folder")
    p.set_defaults(func=cmd_convert)


def cmd_convert(args) -> int:
    from ..export import convert
    from .progress import Progress

    gguf = Path(args.gguf)
    if not gguf.is_file():
        raise PteError(f"cannot read {gguf}: no such file")
    out = Path(args.output) if args.output else Path(gguf.stem + _SUFFIX[args.dtype] + ".pte")
    if out.suffix != ".pte":
        raise PteError(f"-o {out}: the output's name must end in .pte")
    report = convert.convert(gguf, out, args.dtype, args.max_seq_len, args.max_context_len,
                             progress=Progress(args.quiet))
    print(json.dumps({"file": str(out), "bytes": report["programs"][args.dtype]["bytes"],
                      "export_s": report["export_s"]}))
    return 0
