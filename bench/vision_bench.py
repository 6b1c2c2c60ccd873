"""Latency of an image model at batch 1: ours against torch on CUDA (natively) or against ONNX
Runtime Web (in headless Chromium), measured in one run; and ResNet-18's conv2d shapes alone,
ours against cuDNN.

    pte-webgpu bench --vision MODEL.pte[.gz] [--backend native|browser] [--runs 50]
        [--warmup 10] [--inputs NAME.npz] [--onnx NAME.onnx] [--torch-model NAME[:ci|full]]
        [--no-torch] [--no-ort] [--output F.json] [--plot F.png] [--markdown F.md]
    python bench/vision_bench.py model MODEL.pte ...   (the same, without the CLI)
    python bench/vision_bench.py browser MODEL.pte --chrome CHROME --dist DIST
        [--chrome-flags "$CHROME_FLAGS"] [--builds jsep,webgpu-ep] ...
        the browser side driven over Chrome's DevTools protocol (no Playwright: the H200)
    python bench/vision_bench.py convs [--programs DIR] [--convs 3x3s1-64x56-64,...]
        [--via auto|programs|conv_gpu] [--no-torch] [--output F.json] [--plot F.png]
        [--markdown F.md]
    python bench/vision_bench.py report F.json [--plot F.png] [--markdown F.md]
        the table and plot again from the records of a run

The model: ours (bench/vision_job.py) natively or in the page; natively also torch eager and
torch.compile (bench/vision_torch.py) on the same module with the same seeded weights
(bench/vision_models.build: the name and size in NAME.json beside the program, written by
bench/vision_export.py, or --torch-model); in the browser ONNX Runtime Web's two WebGPU builds
on NAME.onnx (bench/vision_browser.py). One image for all: in0 of NAME.npz (beside the
program, or --inputs) when it has one, else a seeded normal image; its out0 (eager torch)
is the reference every side's output is compared with, and each side with ours.

The convs: per shape (bench/vision_shapes.py), ours through bench/conv_gpu.py where it
exists (the rule's pick and every candidate variant of the conv family, through the real op
handler), else through the one aten.convolution of DIR/conv_SHAPE.pte (bench/vision_export.py
convs); timed as the op benches time kernels (gpu_bench.measure: GPU timestamps where
present), the copy kernel beside, and torch.nn.functional.conv2d (cuDNN, TF32 off; CUDA
events) in the same run.

Records: a JSON list; ``impl`` ours | torch-eager | torch-compile (MODE) | ort-web | copy |
torch-cudnn, latency fields median_ms, p10_ms, p90_ms, min_ms, max_ms, ms (the samples).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shlex
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
if str(HERE) not in sys.path:  # the job, torch, browser and shape parts beside this file
    sys.path.append(str(HERE))

import vision_shapes  # noqa: E402

CONV_DIR = REPO / "build" / "vision" / "convs"
TOLERANCE = {"float32": 1e-4, "float16": 2e-2}  # relative to the reference's largest value


# --- what the model takes ---------------------------------------------------------------------
def read_program(path: Path) -> bytes:
    data = path.read_bytes()
    return gzip.decompress(data) if path.suffix == ".gz" else data


def stem(path: Path) -> str:
    return path.name.removesuffix(".gz").removesuffix(".pte")


def beside(model: Path, suffix: str) -> Path | None:
    """NAME.suffix beside the program (NAME-fp16.pte and NAME_fp16.pte also find
    NAME.suffix)."""
    name = stem(model)
    for n in (name, name.removesuffix("-fp16").removesuffix("_fp16")):
        p = model.parent / f"{n}{suffix}"
        if p.is_file():
            return p
    return None


def input_spec(pte: bytes) -> tuple[list[int], str]:
    """forward's one input (shape, dtype), from the file (no GPU)."""
    from pte_webgpu.errors import UnsupportedError
    from pte_webgpu.formats import open_program

    file = open_program(pte)
    if "forward" not in [p.name for p in file.plans]:
        raise UnsupportedError("the program has no forward method")
    plan = file.plan("forward")
    values = [plan.values[v] for v in plan.inputs]
    specs = [(list(getattr(v, "sizes", ())), getattr(getattr(v, "dtype", None), "name", "?"))
             for v in values]
    if len(specs) != 1 or specs[0][1] != "float32":
        raise UnsupportedError(f"an image model takes one float32 input; forward takes "
                               f"{[f'{d}{s}' for s, d in specs]}")
    return specs[0]


def program_dtype(pte: bytes) -> str:
    """float16 when a Vulkan delegate holds float16 tensors (force_fp16), else float32."""
    from pte_webgpu.formats import open_program

    file = open_program(pte)
    for plan in file.plans:
        for d in plan.delegates:
            graph = getattr(d, "graph", None)
            if graph is not None and any(getattr(getattr(v, "dtype", None), "name", "") == "float16"
                                         for v in graph.graph.values):
                return "float16"
    return "float32"


def image_for(shape, inputs: Path | None):
    """(image, reference output or None, where the image came from)."""
    import numpy as np

    if inputs is not None:
        arrays = np.load(inputs)
        if "in0" in arrays:
            x = arrays["in0"].astype(np.float32)
            if list(x.shape) != list(shape):
                raise ValueError(f"{inputs}: in0 is {list(x.shape)}, the program takes {list(shape)}")
            return x, (arrays["out0"].astype(np.float32) if "out0" in arrays else None), \
                f"{inputs.name} in0"
    return np.random.default_rng(0).standard_normal(shape, dtype=np.float32), None, "seeded normal"


def torch_target(model: Path, given: str | None) -> tuple[str, str] | None:
    """(name, size) of the torch module: --torch-model NAME[:SIZE], else NAME.json's
    "model" and "size" (bench/vision_export.py), else None."""
    if given:
        name, _, size = given.partition(":")
        return name, size or "full"
    meta = beside(model, ".json")
    try:
        m = json.loads(meta.read_text()) if meta else {}
    except (OSError, ValueError):
        m = {}
    return (m["model"], m.get("size", "full")) if "model" in m else None


def compare(got, want) -> dict:
    """max |got - want|, that over max |want|, and (class scores) whether the top-1 agrees."""
    import numpy as np

    if want is None or got.shape != want.shape:
        return {"shape": list(got.shape), "want_shape": None if want is None else list(want.shape)}
    diff = float(np.abs(got.astype(np.float64) - want).max()) if got.size else 0.0
    scale = float(np.abs(want).max()) or 1.0
    out = {"max_abs": diff, "max_rel": diff / scale}
    if got.ndim == 2:
        out["top1_equal"] = bool((got.argmax(-1) == want.argmax(-1)).all())
    return out


def attach_checks(records: list[dict], outputs: dict, reference, dtype: str) -> list[str]:
    """Each record with an output gets vs_reference and vs_ours; lines for what is off."""
    problems = []
    tol = TOLERANCE[dtype]
    for r in records:
        label = r.get("variant", r["impl"])
        got = outputs.get(label)
        if got is None:
            continue
        r["vs_reference"] = compare(got, reference)
        if label != "ours" and "ours" in outputs:
            r["vs_ours"] = compare(got, outputs["ours"])
        c = r["vs_reference"]
        if "max_rel" in c and c["max_rel"] > (tol if label == "ours" else TOLERANCE["float32"]):
            problems.append(f"{label}: output differs from the reference by {c['max_rel']:.2e} "
                            "of its largest value")
    return problems


# --- the model ---------------------------------------------------------------------------------
def native(pte: bytes, image, runs: int, warmup: int, progress) -> tuple[list[dict], dict]:
    import vision_browser
    import vision_job
    from pte_webgpu.app.run_job import run_coroutine

    from pte_webgpu.errors import PteError

    try:
        got = run_coroutine(vision_job.vision_job(pte, image.astype("<f4").tobytes(), runs=runs,
                                                  warmup=warmup, backend="native",
                                                  progress=progress))
    except PteError as e:  # an op we lack: torch still runs
        progress(f"ours failed: {type(e).__name__}: {str(e)[:300]}")
        return [{"impl": "ours", "backend": "native", "error": f"{type(e).__name__}: {e}"}], {}
    return got["records"], {"ours": vision_browser.decode_output(got["output"])}


def torch_side(target, image, runs: int, warmup: int, cpu: bool,
               progress) -> tuple[list[dict], dict]:
    """Torch's records and outputs: eager and compiled on CUDA; without CUDA eager on the
    CPU when ``cpu`` (for testing), else none."""
    try:
        import torch
    except ImportError:
        progress("torch is not installed here: no torch records")
        return [], {}
    import vision_torch

    device = "cuda" if torch.cuda.is_available() else "cpu" if cpu else None
    if device is None:
        progress("torch has no CUDA here: no torch records")
        return [], {}
    got = vision_torch.model_records(*target, image, device=device, runs=runs, warmup=warmup,
                                     compile=device == "cuda", progress=progress)
    return got["records"], got["outputs"]


def main_vision(model: Path, backend: str = "native", *, runs: int = 50, warmup: int = 10,
                inputs: Path | None = None, onnx: Path | None = None,
                torch_model: str | None = None, torch: bool = True, torch_cpu: bool = False,
                ort: bool = True, builds=None, chrome: str | None = None, flags=(),
                dist: Path | None = None, output=None, plot_path=None, markdown_path=None,
                progress=print) -> int:
    """``pte-webgpu bench --vision`` (arguments checked by the CLI on the host)."""
    pte = read_program(model)
    shape, _ = input_spec(pte)
    dtype = program_dtype(pte)
    image, reference, source = image_for(shape, inputs or beside(model, ".npz"))
    progress(f"{model.name}: input {shape} ({source}), {dtype}")
    base = {"file": model.name, "dtype": dtype, "image": source}
    if backend == "native":
        records, outputs = native(pte, image, runs, warmup, progress)
        target = torch_target(model, torch_model)
        if torch and target is None:
            progress("no torch model named (NAME.json beside the program or --torch-model): "
                     "no torch records")
        elif torch:
            more, outs = torch_side(target, image, runs, warmup, torch_cpu, progress)
            records += more
            outputs.update(outs)
    else:
        import vision_browser

        onnx = onnx or beside(model, ".onnx")
        more, outputs = vision_browser.run(
            model, image, onnx if ort else None, runs=runs, warmup=warmup,
            builds=builds or tuple(vision_browser.ORT_BUILDS), chrome=chrome, flags=flags,
            dist=dist, progress=progress)
        records = more
    records = [dict(base, **r) if r["impl"] != "copy" else dict(r, file=model.name)
               for r in records]
    for line in attach_checks(records, outputs, reference, dtype):
        progress(f"CHECK: {line}")
    return write(records, markdown(records), output, plot_path, markdown_path,
                 f"vision-{stem(model)}-{backend}", plot, progress)


def write(records, text, output, plot_path, markdown_path, default_name, plotter, progress) -> int:
    print(text)
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(json.dumps(records, indent=1) + "\n")
        progress(f"wrote {output}")
    plot_path = plot_path or (Path(output).with_suffix(".png") if output else
                              REPO / "build" / "bench" / f"{default_name}.png")
    Path(plot_path).parent.mkdir(parents=True, exist_ok=True)
    if plotter(records, str(plot_path)):
        progress(f"wrote {plot_path}")
    if markdown_path:
        Path(markdown_path).write_text(text + "\n")
    return 0


# --- the convs ---------------------------------------------------------------------------------
async def ours_conv(pte: bytes, conv) -> list[dict]:
    """The dispatches of a one-op program timed as gpu_bench times a kernel (after one
    execute: the grids set), and the copy kernel over as many bytes as the conv's."""
    import array

    import gpu_bench
    from pte_webgpu import Runtime
    from pte_webgpu.gpu.recording import dispatch_runs
    from pte_webgpu.model.tensor import Tensor
    from pte_webgpu.runtime.build import Resources
    from pte_webgpu.runtime.method import gpu_work

    rt = await Runtime.create("native")
    try:
        program = await rt.load_program(pte)
        try:
            method = program.load_method("forward")
            shape, _ = method.input_specs()[0]
            x = array.array("f", [0.5]) * (shape[0] * shape[1] * shape[2] * shape[3])
            await method.execute([Tensor(x.tobytes(), shape)], as_numpy=False)
            steps = [s for run in dispatch_runs(gpu_work(method).recording.steps)
                     for s in run]
            timer = gpu_bench.Timer(rt.device)
            rec = await gpu_bench.measure(timer, steps, conv.nbytes)
            variants = sorted({k["variant"] for k in method.kernels if k.get("variant")})
            ops = sorted({k["op"] for k in method.kernels if k.get("dispatches")})
        finally:
            program.close()
        out = [dict(rec, impl="ours", variant=", ".join(variants) or "chosen", ops=ops,
                    tflops=conv.flops / (rec["us"] * 1e-6) / 1e12)]
        res = Resources(rt.device)
        try:
            n = -(-conv.nbytes // 32) * 16  # half read, half written: as many bytes in all
            out += await gpu_bench.copy_records(rt.device, timer, res.buffer(n, "copy src"),
                                                res.buffer(n, "copy dst"), n)
        finally:
            res.release()
        adapter = rt.adapter.summary()
        return [dict(r, shape=conv.name, kind=conv.kind, adapter=adapter) for r in out]
    finally:
        rt.close()


def conv_gpu_module():
    """bench/conv_gpu.py (our conv family's variants, timed one by one) where it exists."""
    try:
        import conv_gpu
    except ImportError:
        return None
    return conv_gpu if hasattr(conv_gpu, "bench_conv") and hasattr(conv_gpu, "conv_spec") else None


async def ours_conv_variants(conv_gpu, conv) -> list[dict]:
    """conv_gpu.bench_conv at the shape: the rule's pick ("chosen ...") and every candidate
    variant through the real op handler, and the copy kernel."""
    from pte_webgpu.gpu.native import NativeDevice

    device = await NativeDevice.create()
    try:
        spec = conv_gpu.conv_spec(conv.cin, conv.hw, conv.hw, conv.cout, conv.k, conv.stride,
                                  conv.pad)
        records = await conv_gpu.bench_conv(device, spec)
    finally:
        device.close()
    return [dict(r, shape=conv.name, kind=conv.kind, source="conv_gpu",
                 **({"tflops": conv.flops / (r["us"] * 1e-6) / 1e12} if r["impl"] == "ours" else {}))
            for r in records]


def conv_list(text: str | None, programs: Path) -> list:
    """--convs, else the shapes of DIR's conv_SHAPE.pte programs, else ResNet-18's."""
    if text or not programs.is_dir():
        return vision_shapes.parse_convs(text)
    names = sorted(p.name.removeprefix("conv_").removesuffix(".pte")
                   for p in programs.glob("conv_*.pte"))
    order = [c.name for c in vision_shapes.RESNET18_CONVS]
    names.sort(key=lambda n: order.index(n) if n in order else len(order))
    return vision_shapes.parse_convs(",".join(names))


def main_convs(programs: Path, convs, *, torch: bool = True, via: str = "auto", output=None,
               plot_path=None, markdown_path=None, progress=print) -> int:
    """``via``: "programs" (the one-op programs), "conv_gpu" (bench/conv_gpu.py: every
    variant of the conv family at the shape), "auto" (conv_gpu where it exists)."""
    from pte_webgpu.app.run_job import run_coroutine
    from pte_webgpu.errors import PteError

    records = []
    conv_gpu = conv_gpu_module() if via != "programs" else None
    if via == "conv_gpu" and conv_gpu is None:
        raise SystemExit("bench/conv_gpu.py (bench_conv, conv_spec) is not in this checkout")
    for conv in convs:
        if conv_gpu is not None:
            got = run_coroutine(ours_conv_variants(conv_gpu, conv))
            records += got
            chosen = next((r for r in got if r["variant"].startswith("chosen")), got[0])
            progress(f"ours conv {conv.name}: {chosen['variant']} {chosen['us']:.1f} µs, "
                     f"{sum(r['impl'] == 'ours' for r in got)} variants")
            continue
        path = programs / f"conv_{conv.name}.pte"
        if not path.is_file():
            progress(f"{path} is missing (bench/vision_export.py convs): no ours record")
            continue
        try:
            got = run_coroutine(ours_conv(path.read_bytes(), conv))
        except PteError as e:  # an op we lack: say so and go on with the others
            progress(f"ours {conv.name}: {type(e).__name__}: {str(e)[:300]}")
            records.append({"impl": "ours", "shape": conv.name, "kind": conv.kind,
                            "error": f"{type(e).__name__}: {e}"})
            continue
        records += got
        progress(f"ours conv {conv.name}: {got[0]['us']:.1f} µs ({got[0]['timing']})")
    if torch:
        try:
            import torch as _torch
        except ImportError:
            _torch = None
        if _torch is not None and _torch.cuda.is_available():
            import vision_torch

            records += vision_torch.conv_records(convs, "cuda", progress)
        else:
            progress("no torch with CUDA here: no cuDNN records")
    return write(records, conv_markdown(records), output, plot_path, markdown_path,
                 "vision-convs", conv_plot, progress)


# --- report ------------------------------------------------------------------------------------
def _label(r) -> str:
    return r.get("variant", r["impl"])


def markdown(records) -> str:
    lat = [r for r in records if r["impl"] != "copy" and "median_ms" in r]
    lines = ["| impl | adapter | median ms | p10-p90 ms | min ms | GPU ms (passes / per dispatch) "
             "| vs reference (max rel) | ours / this |", "|---|---|---|---|---|---|---|---|"]
    ours = next((r for r in lat if r["impl"] == "ours"), None)
    for r in lat:
        gpu = " / ".join(f"{r[k]:.3f}" for k in ("gpu_pass_ms", "gpu_profile_ms") if k in r)
        if "gpu_median_ms" in r:
            gpu = f"{r['gpu_median_ms']:.3f} (CUDA events, forward)"
        ref = r.get("vs_reference", {})
        rel = f"{ref['max_rel']:.1e}" + ("" if ref.get("top1_equal", True) else " top-1 differs") \
            if "max_rel" in ref else "-"
        ratio = f"{ours['median_ms'] / r['median_ms']:.2f}x" if ours and r is not ours else "-"
        lines.append(f"| {_label(r)} | {r.get('adapter', '?')} | {r['median_ms']:.3f} | "
                     f"{r['p10_ms']:.3f}-{r['p90_ms']:.3f} | {r['min_ms']:.3f} | {gpu or '-'} | "
                     f"{rel} | {ratio} |")
    for r in records:
        if "error" in r:
            lines.append(f"\n{_label(r)} failed: {r['error'].splitlines()[0][:300]}")
    copies = [r for r in records if r["impl"] == "copy"]
    if copies:
        best = min(copies, key=lambda r: r["us"])
        lines.append(f"\ncopy kernel over the weights ({best['weights_bytes'] / 1e6:.2f} MB): "
                     f"{best['us']:.1f} µs, {best['gbps']:.1f} GB/s ({best['variant']}, "
                     f"{best['timing']})")
    lines.append("\nours / this: ours' median latency over this one's (below 1: ours is faster).")
    return "\n".join(lines)


def _cell(r: dict, key: str, form: str) -> str:
    return form.format(r[key]) if key in r else "-"


def conv_markdown(records) -> str:
    by = {}
    for r in records:
        by.setdefault(r["shape"], {}).setdefault(r["impl"], []).append(r)
    lines = ["| shape | kind | ours µs (variant) | ours TFLOP/s | cuDNN µs | cuDNN TFLOP/s | "
             "ours / cuDNN speed | copy µs (same bytes) | best variant µs |",
             "|---|---|---|---|---|---|---|---|---|"]
    ratios = {}
    for shape, impls in by.items():
        mine = impls.get("ours") or [{}]
        o = next((r for r in mine if r.get("variant", "").startswith("chosen")), mine[0])
        whole = [r for r in mine if "us" in r and not r.get("part")]
        best = min(whole, key=lambda r: r["us"]) if len(whole) > 1 else None
        best_cell = f"{best['us']:.1f} ({best['variant']})" if best else "-"
        t = (impls.get("torch-cudnn") or impls.get("torch-cpu") or [{}])[0]
        c = min(impls.get("copy", []), key=lambda r: r["us"], default={})
        speed = f"{t['us'] / o['us']:.2f}x" if "us" in o and "us" in t else "-"
        if speed != "-":
            ratios.setdefault(o.get("kind", t.get("kind")), []).append(t["us"] / o["us"])
        lines.append(f"| {shape} | {o.get('kind', t.get('kind', '?'))} | "
                     f"{_cell(o, 'us', '{:.1f}')}{' (' + o['variant'] + ')' if 'variant' in o else ''}"
                     f"{' ' + o['error'].splitlines()[0][:80] if 'error' in o else ''} | "
                     f"{_cell(o, 'tflops', '{:.3g}')} | {_cell(t, 'us', '{:.1f}')} | "
                     f"{_cell(t, 'tflops', '{:.3g}')} | {speed} | {_cell(c, 'us', '{:.1f}')} | "
                     f"{best_cell} |")
    for kind, rs in ratios.items():
        lines.append(f"\n{kind}: ours / cuDNN speed, geometric mean over {len(rs)} shapes: "
                     f"{statistics.geometric_mean(rs):.2f}x")
    return "\n".join(lines)


def _pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def plot(records, path: str) -> bool:
    """Median latency per impl, p10-p90 as the error bar (False without matplotlib)."""
    plt = _pyplot()
    lat = [r for r in records if r["impl"] != "copy" and "median_ms" in r]
    if plt is None or not lat:
        return False
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(lat) + 1.5))
    y = range(len(lat))
    med = [r["median_ms"] for r in lat]
    err = [[r["median_ms"] - r["p10_ms"] for r in lat], [r["p90_ms"] - r["median_ms"] for r in lat]]
    ax.barh(list(y), med, xerr=err, color=["tab:blue" if r["impl"] == "ours" else "tab:gray"
                                           for r in lat])
    ax.set_yticks(list(y), [_label(r) for r in lat])
    ax.invert_yaxis()
    ax.set_xlabel("ms per image, batch 1 (median, p10-p90)")
    ax.set_title(f"{lat[0].get('file', '')} on {lat[0].get('adapter', '?')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def conv_plot(records, path: str) -> bool:
    plt = _pyplot()
    shapes = list(dict.fromkeys(r["shape"] for r in records if "us" in r))
    if plt is None or not shapes:
        return False
    fig, ax = plt.subplots(figsize=(9, 4))
    width = 0.4
    for i, (impl, color) in enumerate((("ours", "tab:blue"), ("torch-cudnn", "tab:gray"))):
        vals = [next((r["tflops"] for r in records if r["shape"] == s and r["impl"] == impl
                      and "tflops" in r), 0) for s in shapes]
        ax.bar([k + (i - 0.5) * width for k in range(len(shapes))], vals, width, label=impl,
               color=color)
    ax.set_xticks(range(len(shapes)), shapes, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel("TFLOP/s (fp32)")
    ax.legend()
    ax.set_title("ResNet-18 conv2d shapes, batch 1", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# --- command line (the script) -----------------------------------------------------------------
def _model_args(p):
    p.add_argument("pte", type=Path)
    p.add_argument("--runs", type=int, default=50)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--inputs", type=Path)
    p.add_argument("--output", type=Path)
    p.add_argument("--plot", type=Path)
    p.add_argument("--markdown", type=Path)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("model", help="natively: ours, torch eager and compiled")
    _model_args(m)
    m.add_argument("--torch-model", metavar="NAME[:SIZE]")
    m.add_argument("--no-torch", action="store_true")
    m.add_argument("--torch-cpu", action="store_true", help="torch eager on the CPU when "
                   "there is no CUDA (testing)")
    b = sub.add_parser("browser", help="in Chromium over the DevTools protocol: ours, ORT Web")
    _model_args(b)
    b.add_argument("--onnx", type=Path)
    b.add_argument("--builds", default="jsep,webgpu-ep")
    b.add_argument("--chrome", required=True)
    b.add_argument("--dist", type=Path, required=True, help="the Pyodide dist (make dist)")
    b.add_argument("--chrome-flags", default="--enable-unsafe-webgpu",
                   help="Chromium's flags, one string (the H200: unpack.sh's $CHROME_FLAGS)")
    c = sub.add_parser("convs", help="ResNet-18's conv2d shapes: ours, copy, cuDNN")
    c.add_argument("--programs", type=Path, default=CONV_DIR)
    c.add_argument("--convs", help="shapes (default: those of DIR's programs)")
    c.add_argument("--no-torch", action="store_true")
    c.add_argument("--via", choices=("auto", "programs", "conv_gpu"), default="auto",
                   help="ours through the one-op programs or bench/conv_gpu.py's variants "
                   "(auto: conv_gpu where it exists)")
    c.add_argument("--output", type=Path)
    c.add_argument("--plot", type=Path)
    c.add_argument("--markdown", type=Path)
    r = sub.add_parser("report", help="the table and plot again from a run's records "
                       "(e.g. written where matplotlib was missing)")
    r.add_argument("records", type=Path)
    r.add_argument("--plot", type=Path)
    r.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    if args.cmd == "report":
        records = json.loads(args.records.read_text())
        convs = any("shape" in rec for rec in records)
        return write(records, (conv_markdown if convs else markdown)(records), None,
                     args.plot or args.records.with_suffix(".png"), args.markdown, "",
                     conv_plot if convs else plot, print)
    if args.cmd == "convs":
        return main_convs(args.programs, conv_list(args.convs, args.programs),
                          torch=not args.no_torch, via=args.via, output=args.output,
                          plot_path=args.plot,
                          markdown_path=args.markdown)
    common = dict(runs=args.runs, warmup=args.warmup, inputs=args.inputs, output=args.output,
                  plot_path=args.plot, markdown_path=args.markdown)
    if args.cmd == "model":
        return main_vision(args.pte, "native", torch_model=args.torch_model,
                           torch=not args.no_torch, torch_cpu=args.torch_cpu, **common)
    return main_vision(args.pte, "browser", onnx=args.onnx, builds=args.builds.split(","),
                       chrome=args.chrome, flags=shlex.split(args.chrome_flags), dist=args.dist,
                       **common)


if __name__ == "__main__":
    sys.exit(main())
