"""The vision bench's programs, exported on the host (the export venv: torch, executorch,
onnx). Run with ``PYTHONPATH=pkg .venv-export/bin/python bench/vision_export.py ...``:

    model NAME [--size ci|full] [--out-dir D] [--fp16] [--no-pte] [--no-onnx]
        D/NAME[-fp16].pte (to_edge_transform_and_lower with the VulkanPartitioner),
        D/NAME.npz (in0: a seeded input; out0: eager torch's output for it),
        D/NAME.onnx (torch.onnx.export of the same module: ORT Web's side) and
        D/NAME.json ({"model", "size", "input", ...}: what the torch side rebuilds)
    onnx NAME [--size ci|full] [--out-dir D]
        D/NAME.onnx alone, checked with onnxruntime (CPU) against D/NAME.npz's in0 -> out0
        where that exists (the programs of tests/fixtures/vision/make_vision.py), else
        against eager torch
    convs [--out-dir D] [--convs 3x3s1-64x56-64,...]
        D/conv_SHAPE.pte: one aten.convolution each (ResNet-18's conv2d shapes, no bias):
        ours' side of the conv comparison where bench/conv_gpu.py is absent

The module and its seeded weights come from bench/vision_models.build, the same call the
torch side makes on the GPU machine.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)  # the partitioner's INFO lines, torch.onnx's deprecation

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import vision_models  # noqa: E402
import vision_shapes  # noqa: E402

INPUT_SEED = 7


def seeded_input(shape, seed: int = INPUT_SEED):
    import torch

    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def export_pte(module, example, path: Path, fp16: bool = False) -> dict:
    """``module`` at ``example`` lowered with the VulkanPartitioner into ``path``; the
    delegates' op chains and the ops left on the CPU."""
    import torch
    from executorch.backends.vulkan.partitioner.vulkan_partitioner import VulkanPartitioner
    from executorch.exir import to_edge_transform_and_lower

    ep = torch.export.export(module, (example,))
    options = {"force_fp16": True} if fp16 else None
    lowered = to_edge_transform_and_lower(ep, partitioner=[VulkanPartitioner(options)])
    program = lowered.to_executorch()
    path.write_bytes(program.buffer)
    return _summary(program.buffer)


def _summary(buffer: bytes) -> dict:
    from executorch.backends.vulkan.serialization.vulkan_graph_serialize import (
        extract_vk_flatbuffer, flatbuffer_to_vk_graph)
    from executorch.exir._serialize._program import deserialize_pte_binary

    prog = deserialize_pte_binary(buffer).program
    ops, cpu = [], []
    for plan in prog.execution_plan:
        for d in plan.delegates:
            if d.id == "VulkanBackend":
                blob = prog.backend_delegate_data[d.processed.index].data
                ops += [c.name for c in flatbuffer_to_vk_graph(extract_vk_flatbuffer(blob)).chain]
        cpu += [f"{o.name}.{o.overload}" if o.overload else o.name for o in plan.operators]
    return {"vk_ops": sorted(set(ops)), "vk_op_count": len(ops), "cpu_ops": sorted(set(cpu))}


def export_onnx(module, example, path: Path) -> None:
    """The same module as ONNX (opset 17, the TorchScript exporter: no onnxscript needed),
    input ``input``, output ``output``; checked with onnx.checker."""
    import onnx
    import torch

    torch.onnx.export(module, (example,), str(path), input_names=["input"],
                      output_names=["output"], opset_version=17, dynamo=False)
    onnx.checker.check_model(onnx.load(str(path)))


def onnx_cpu_output(path: Path, x):
    """onnxruntime (CPU) on the file: a check that the ONNX graph is the torch module."""
    import onnxruntime

    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return session.run(None, {"input": x})[0]


def export_model(name: str, size: str, out_dir: Path, *, fp16: bool = False, pte: bool = True,
                 onnx: bool = True, log=print) -> dict:
    import numpy as np
    import torch

    out_dir.mkdir(parents=True, exist_ok=True)
    module, shape = vision_models.build(name, size)
    x = seeded_input(shape)
    with torch.no_grad():
        want = module(x)
    meta = {"model": name, "size": size, "input": list(shape), "output": list(want.shape),
            "input_seed": INPUT_SEED, "torch": torch.__version__}
    np.savez(out_dir / f"{name}.npz", in0=x.numpy(), out0=want.numpy())
    if pte:
        t0 = time.time()
        file = f"{name}-fp16.pte" if fp16 else f"{name}.pte"
        with torch.no_grad():
            meta["pte"] = dict(export_pte(module, x, out_dir / file, fp16), file=file,
                               bytes=(out_dir / file).stat().st_size, fp16=fp16)
        log(f"{out_dir / file} in {time.time() - t0:.0f} s: {meta['pte']['bytes'] / 1e6:.2f} MB, "
            f"{meta['pte']['vk_op_count']} "
            f"Vulkan ops {meta['pte']['vk_ops']}, CPU ops {meta['pte']['cpu_ops']}")
    if onnx:
        path = out_dir / f"{name}.onnx"
        export_onnx(module, x, path)
        got = onnx_cpu_output(path, x.numpy())
        meta["onnx"] = {"file": path.name, "bytes": path.stat().st_size,
                        "cpu_max_abs_vs_torch": float(np.abs(got - want.numpy()).max())}
        log(f"{path}: {meta['onnx']['bytes'] / 1e6:.2f} MB, onnxruntime CPU vs torch "
            f"{meta['onnx']['cpu_max_abs_vs_torch']:.2e}")
    (out_dir / f"{name}.json").write_text(json.dumps(meta, indent=1) + "\n")
    return meta


def export_onnx_beside(name: str, size: str, out_dir: Path, log=print) -> dict:
    """NAME.onnx for a program exported elsewhere: the same module, checked on NAME.npz."""
    import numpy as np
    import torch

    module, shape = vision_models.build(name, size)
    ref = out_dir / f"{name}.npz"
    if ref.is_file():
        arrays = np.load(ref)
        x, want = torch.from_numpy(arrays["in0"]), arrays["out0"]
    else:
        x = seeded_input(shape)
        with torch.no_grad():
            want = module(x).numpy()
    path = out_dir / f"{name}.onnx"
    out_dir.mkdir(parents=True, exist_ok=True)
    export_onnx(module, x, path)
    diff = float(np.abs(onnx_cpu_output(path, x.numpy()) - want).max())
    scale = float(np.abs(want).max()) or 1.0
    log(f"{path}: {path.stat().st_size / 1e6:.2f} MB, onnxruntime CPU vs "
        f"{ref.name if ref.is_file() else 'eager torch'}: {diff:.2e} ({diff / scale:.1e} of "
        "its largest value)")
    if diff > 1e-3 * scale:
        raise SystemExit(f"{path} does not compute {name} ({size}): off by {diff / scale:.1e}")
    return {"file": path.name, "max_abs": diff, "max_rel": diff / scale}


class OneConv:
    """torch.nn.Conv2d (no bias) as the model: a program of one aten.convolution."""

    def __new__(cls, conv: vision_shapes.Conv, seed: int = 0):
        import torch

        m = torch.nn.Conv2d(conv.cin, conv.cout, conv.k, conv.stride, conv.pad, bias=False)
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            m.weight.copy_(torch.randn(m.weight.shape, generator=g) / (conv.cin * conv.k ** 2) ** 0.5)
        return m.eval()


def export_convs(convs, out_dir: Path, log=print) -> list[dict]:
    import torch

    out_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for conv in convs:
        x = seeded_input([1, conv.cin, conv.hw, conv.hw])
        path = out_dir / f"conv_{conv.name}.pte"
        with torch.no_grad():
            summary = export_pte(OneConv(conv), x, path)
        out.append(dict(summary, shape=conv.name, file=path.name, bytes=path.stat().st_size))
        log(f"{path}: {summary['vk_ops']} {summary['cpu_ops']}")
    (out_dir / "convs.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model")
    m.add_argument("name", help=f"one of {', '.join(vision_models.names())}")
    m.add_argument("--size", choices=vision_models.SIZES, default="full")
    m.add_argument("--out-dir", type=Path, default=HERE.parent / "build" / "vision")
    m.add_argument("--fp16", action="store_true", help="force_fp16 (NAME-fp16.pte)")
    m.add_argument("--no-pte", action="store_true")
    m.add_argument("--no-onnx", action="store_true")
    o = sub.add_parser("onnx")
    o.add_argument("name")
    o.add_argument("--size", choices=vision_models.SIZES, default="full")
    o.add_argument("--out-dir", type=Path, default=HERE.parent / "build" / "vision")
    c = sub.add_parser("convs")
    c.add_argument("--out-dir", type=Path, default=HERE.parent / "build" / "vision" / "convs")
    c.add_argument("--convs", help="shapes (default: ResNet-18's)")
    args = p.parse_args(argv)
    if args.cmd == "model":
        export_model(args.name, args.size, args.out_dir, fp16=args.fp16, pte=not args.no_pte,
                     onnx=not args.no_onnx)
    elif args.cmd == "onnx":
        export_onnx_beside(args.name, args.size, args.out_dir)
    else:
        export_convs(vision_shapes.parse_convs(args.convs), args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
