"""``pte-webgpu bench --op conv``: our convolution (as chosen and each candidate
variant) against the copy kernel over the input's bytes and torch's CUDA convolution
(cuDNN, TF32 off, benchmark mode; native, where present), float32 and float16.

    pte-webgpu bench --op conv [--shapes 64x56x56-64k3s1p1,...] [--dtypes float32,float16]
                     [--output F.json] [--markdown F.md] [--variants V,...]

A shape is CinxHxW-CoutkKsSpP[gG][bB] (batch B, groups G). The defaults: ResNet-18's at
224x224 (the 7x7 stride-2 stem, the 3x3 at 56/28/14/7 with 64-512 channels and their
stride-2 entries, the 1x1 stride-2 downsamples) and MobileNetV2's depthwise 3x3 and
pointwise 1x1. Records: {"backend", "adapter", "shape": [N, Cin, H, W, Cout, k, stride,
pad, groups], "dtype", "impl": "ours"|"copy"|"torch-cuda", "variant", "us", "gbps",
"tflops"}. Native only (the timing is bench/gpu_bench.py's).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
RESNET18 = ["3x224x224-64k7s2p3", "64x56x56-64k3s1p1", "64x56x56-128k3s2p1",
            "128x28x28-128k3s1p1", "128x28x28-256k3s2p1", "256x14x14-256k3s1p1",
            "256x14x14-512k3s2p1", "512x7x7-512k3s1p1", "64x56x56-128k1s2p0",
            "128x28x28-256k1s2p0", "256x14x14-512k1s2p0"]
MOBILENET_V2 = ["32x112x112-32k3s1p1g32", "96x112x112-96k3s2p1g96", "144x56x56-144k3s1p1g144",
                "144x56x56-144k3s2p1g144", "192x28x28-192k3s1p1g192", "384x14x14-384k3s1p1g384",
                "576x14x14-576k3s1p1g576", "960x7x7-960k3s1p1g960", "16x112x112-96k1s1p0",
                "144x56x56-24k1s1p0", "576x14x14-96k1s1p0", "960x7x7-320k1s1p0"]
DEFAULT_SHAPES = RESNET18 + MOBILENET_V2
_SHAPE = re.compile(r"^(\d+)x(\d+)x(\d+)-(\d+)k(\d+)s(\d+)p(\d+)(?:g(\d+))?(?:b(\d+))?$")
TARGET_S = 0.05  # wall time aimed at per measurement


def parse_shapes(text) -> list[tuple[int, ...]]:
    """(cin, h, w, cout, k, stride, pad, groups, batch) of each shape."""
    out = []
    for part in (text.split(",") if text else DEFAULT_SHAPES):
        m = _SHAPE.match(part.strip().lower())
        if not m:
            raise ValueError(f"bad conv shape {part!r}: use CinxHxW-CoutkKsSpP[gG][bB], e.g. "
                             "64x56x56-64k3s1p1")
        out.append(tuple(int(g) if g else 1 for g in m.groups()))
    return out


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_native(shapes, dtypes, variants=None) -> list[dict]:
    sys.path.insert(0, str(HERE))
    try:
        import conv_gpu
        import gpu_bench
    finally:
        sys.path.remove(str(HERE))
    gpu_bench.TARGET_S = TARGET_S
    records = gpu_bench.run_native([(f"{s} {dt}", lambda device, s=s, dt=dt: conv_gpu.bench_conv(
        device, conv_gpu.conv_spec(*s), dt == "float16", variants))
        for s in shapes for dt in dtypes], _log)
    adapter = records[0]["adapter"] if records else "?"
    return records + torch_cuda(shapes, dtypes, adapter)


def torch_cuda(shapes, dtypes, adapter: str) -> list[dict]:
    import gpu_bench  # loaded by run_native

    torch = gpu_bench.cuda_torch()
    if torch is None:
        return []
    torch.backends.cudnn.benchmark = True  # cuDNN's fastest algorithm for each shape
    name, out = torch.cuda.get_device_name(), []
    for cin, h, w, cout, k, stride, pad, groups, batch in shapes:
        for dt in dtypes:
            t = getattr(torch, dt)
            x = torch.rand(batch, cin, h, w, device="cuda", dtype=t) * 2 - 1
            wt = torch.rand(cout, cin // groups, k, k, device="cuda", dtype=t) * 2 - 1
            b = torch.rand(cout, device="cuda", dtype=t) * 2 - 1
            y = torch.nn.functional.conv2d(x, wt, b, stride, pad, 1, groups)
            us, iters = gpu_bench.cuda_us(torch, lambda: torch.nn.functional.conv2d(
                x, wt, b, stride, pad, 1, groups), TARGET_S)
            es = 2 if dt == "float16" else 4
            nbytes = es * (x.numel() + wt.numel() + b.numel() + y.numel())
            flops = 2.0 * y.numel() * cin // groups * k * k
            out.append({"backend": "native", "adapter": adapter,
                        "shape": [batch, cin, h, w, cout, k, stride, pad, groups], "dtype": dt,
                        "impl": "torch-cuda",
                        "variant": f"torch {torch.__version__} ({name}, cuDNN, TF32 off)",
                        "us": us, "wall_us": us, "gbps": nbytes / (us * 1e-6) / 1e9,
                        "tflops": flops / (us * 1e-6) / 1e12, "timing": "cuda-events",
                        "iters": iters})
    return out


def markdown(records) -> str:
    """One row per (shape, dtype): chosen, best variant, copy kernel, torch, ratio."""
    lines = ["| shape | dtype | chosen | us | best | us | copy us | torch us | torch/ours |",
             "|---|---|---|---|---|---|---|---|---|"]
    keys = list(dict.fromkeys((tuple(r["shape"]), r["dtype"]) for r in records))
    for key in keys:
        recs = [r for r in records if (tuple(r["shape"]), r["dtype"]) == key]
        ours = [r for r in recs if r["impl"] == "ours"]
        chosen = next((r for r in ours if r["variant"].startswith("chosen")), None)
        if chosen is None:
            continue
        best = min(ours, key=lambda r: r["us"])
        copy = min((r["us"] for r in recs if r["impl"] == "copy"), default=float("nan"))
        torch = next((r["us"] for r in recs if r["impl"] == "torch-cuda"), float("nan"))
        lines.append(f"| {'x'.join(map(str, key[0]))} | {key[1]} | {chosen['variant'][7:]} | "
                     f"{chosen['us']:.1f} | {best['variant']} | {best['us']:.1f} | {copy:.1f} | "
                     f"{torch:.1f} | {torch / chosen['us']:.2f} |")
    return "\n".join(lines) + "\n"


def main(backend, shapes, output=None, plot=None, markdown_path=None, variants=None,
         dtypes=("float32",)) -> int:
    if backend != "native":
        raise ValueError("bench --op conv runs natively (--backend native)")
    records = run_native(parse_shapes(shapes), dtypes,
                         [v.strip() for v in variants.split(",")] if variants else None)
    text = markdown(records)
    print(text)
    if output:
        Path(output).write_text(json.dumps(records, indent=1))
    if markdown_path:
        Path(markdown_path).write_text(text)
    return 0
