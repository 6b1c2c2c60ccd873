"""``pte-webgpu bench``: rms_norm (as chosen and each variant) against a copy kernel of the
same bytes, ONNX Runtime Web (browser) and torch's CUDA rms_norm (native, where present).

    pte-webgpu bench [--backend browser|native] [--shapes 512x4096,4096x64]
                     [--output FILE.json] [--plot FILE.png] [--markdown FILE.md]

Records: {"backend", "adapter", "shape": [rows, width], "impl": "ours"|"copy"|"ort-web"|
"js"|"torch-cuda", "variant", "us" (median per op), "gbps", ...}; the variant the rule
picks is named "chosen <variant>". ``us`` comes from GPU timestamps where the adapter has
them ("timing": "timestamps"), else wall time over many ops ("wall"); ``wall_us`` is
always there. Bytes counted: input read + output written (+ the weight for rms_norm).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_SHAPES = [(1, 4096), (32, 4096), (512, 4096), (2048, 4096), (64, 256), (4096, 64)]
EPS = 1e-6
ORT_BUILDS = ("jsep", "webgpu-ep")


def parse_shapes(text: str | None) -> list[tuple[int, int]]:
    if not text:
        return list(DEFAULT_SHAPES)
    out = []
    for part in text.split(","):
        rows, _, width = part.strip().lower().partition("x")
        if not (rows.isdigit() and width.isdigit()) or int(rows) < 1 or int(width) < 1:
            raise ValueError(f"bad shape {part!r}: use ROWSxWIDTH, e.g. 512x4096")
        out.append((int(rows), int(width)))
    return out


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def _import_gpu_bench():
    sys.path.insert(0, str(HERE))
    try:
        import gpu_bench
    finally:
        sys.path.remove(str(HERE))
    return gpu_bench


# --- native ---------------------------------------------------------------------------------
def run_native(shapes, variants=None) -> list[dict]:
    gpu_bench = _import_gpu_bench()
    from pte_webgpu.gpu.native import NativeDevice

    async def go():
        device = await NativeDevice.create()
        _log(f"adapter: {device.info.summary()}")
        records = []
        try:
            for rows, width in shapes:
                t0 = time.perf_counter()
                records += await gpu_bench.bench_shape(device, rows, width, variants)
                _log(f"  {rows}x{width}: {time.perf_counter() - t0:.1f} s")
        finally:
            device.close()
        return records

    records = asyncio.run(go())
    adapter = records[0]["adapter"] if records else "?"
    records += torch_cuda(shapes, adapter)
    return records


def torch_cuda(shapes, adapter: str) -> list[dict]:
    gpu_bench = _import_gpu_bench()
    torch = gpu_bench.cuda_torch()
    if torch is None:
        return []
    out = []
    name = torch.cuda.get_device_name()
    for rows, width in shapes:
        x = torch.randn(rows, width, device="cuda")
        w = torch.randn(width, device="cuda")
        us, iters = gpu_bench.cuda_us(
            torch, lambda: torch.nn.functional.rms_norm(x, (width,), w, EPS), 0.2, least=20)
        nbytes = 8 * rows * width + 4 * width
        out.append({"backend": "native", "adapter": adapter, "shape": [rows, width],
                    "impl": "torch-cuda", "variant": f"torch {torch.__version__} ({name})",
                    "us": us, "wall_us": us, "gbps": nbytes / (us * 1e-6) / 1e9,
                    "timing": "cuda-events", "iters": iters})
    return out


# --- browser --------------------------------------------------------------------------------
def make_models(shapes, folder: Path) -> dict:
    """SimplifiedLayerNormalization models (one per shape) for ONNX Runtime Web."""
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    folder.mkdir(parents=True, exist_ok=True)
    urls = {}
    for rows, width in shapes:
        path = folder / f"simplified_layer_norm_{rows}x{width}.onnx"
        weight = np.random.default_rng(2).uniform(-2, 2, width).astype(np.float32)
        node = helper.make_node("SimplifiedLayerNormalization", ["x", "scale"], ["y"],
                                axis=-1, epsilon=EPS, stash_type=1)
        graph = helper.make_graph(
            [node], "rms_norm",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [rows, width])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [rows, width])],
            [numpy_helper.from_array(weight, "scale")])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
        model.ir_version = 8
        onnx.save(model, str(path))
        urls[(rows, width)] = f"/models/{path.name}"
    return urls


def ort_dist() -> Path | None:
    for base in (REPO / "build" / "ortweb", REPO / "build"):
        p = base / "node_modules" / "onnxruntime-web" / "dist"
        if (p / "ort.mjs").is_file():
            return p
    return None


_PAGE_SETUP = """
import sys, types
_m = types.ModuleType("gpu_bench")
exec(compile(_SRC, "bench/gpu_bench.py", "exec"), _m.__dict__)
sys.modules["gpu_bench"] = gpu_bench = _m
from pte_webgpu.gpu.browser import BrowserDevice
_bench_device = await BrowserDevice.create()
_bench_device.info.summary()
"""


def run_browser(shapes, variants=None, ort=True) -> list[dict]:
    from pte_webgpu.chromium.dist import ensure_dist
    from pte_webgpu.chromium.server import StaticServer
    from pte_webgpu.chromium.session import BrowserSession

    dist = ensure_dist(REPO, log=_log)
    mounts = {"/": REPO / "web", "/pyodide/": dist, "/bench/": HERE}
    ort_folder = ort_dist() if ort else None
    models = {}
    if ort and ort_folder is None:
        _log("onnxruntime-web not found (npm install onnxruntime-web in build/ortweb): "
             "skipping ORT Web")
    elif ort_folder is not None:
        try:
            models = make_models(shapes, REPO / "build" / "bench" / "models")
            mounts["/ort/"] = ort_folder
            mounts["/models/"] = REPO / "build" / "bench" / "models"
        except ImportError:
            _log("the onnx package is missing (pip install onnx): skipping ORT Web")
    src = (HERE / "gpu_bench.py").read_text()
    records: list[dict] = []
    with StaticServer(mounts) as server, \
            BrowserSession(server.url, harness="bench.html", timeout_ms=600_000) as session:
        session.page.set_default_timeout(600_000)
        session.run_python(f"_SRC = {src!r}")
        adapter = session.run_python(_PAGE_SETUP)
        _log(f"adapter: {adapter}")
        for rows, width in shapes:
            t0 = time.perf_counter()
            got = session.run_python(
                f"await gpu_bench.bench_shape(_bench_device, {rows}, {width}, {variants!r})")
            records += got
            spec = session.run_python(f"gpu_bench.chosen_variant(_bench_device, {rows}, {width})")
            spec.update(rows=rows, width=width, eps=EPS)
            base = {"backend": "browser", "adapter": adapter, "shape": [rows, width]}
            nbytes = 8 * rows * width + 4 * width
            rec = session.page.evaluate("spec => window.benchJs(spec)", spec)
            records.append(dict(rec, **base, impl="js", variant=f"js {spec['name']}",
                                gbps=nbytes / (rec["us"] * 1e-6) / 1e9))
            for build in ORT_BUILDS if models else ():
                try:
                    rec = session.page.evaluate(
                        "spec => window.benchOrt(spec)",
                        {"build": build, "modelUrl": models[(rows, width)], "rows": rows,
                         "width": width})
                except Exception as e:  # one build failing must not lose the rest
                    _log(f"  ort-web {build} {rows}x{width} failed: {str(e).splitlines()[0]}")
                    continue
                records.append(dict(rec, **base, impl="ort-web", variant=f"ort-web {build}",
                                    gbps=nbytes / (rec["us"] * 1e-6) / 1e9))
            _log(f"  {rows}x{width}: {time.perf_counter() - t0:.1f} s")
        errors = [m for m in session.console_messages if m.type == "error"] + session.page_errors
        for e in errors[:10]:
            _log(f"  page: {e}")
    return records


# --- report ---------------------------------------------------------------------------------
def _best(recs, impl):
    recs = [r for r in recs if r["impl"] == impl]
    return min(recs, key=lambda r: r["us"]) if recs else None


def like_for_like(ref: dict, ours: dict) -> float:
    """ref time / our time, both on GPU timestamps when both have them, else wall time."""
    if "ts_us" in ref and "ts_us" in ours:
        return ref["ts_us"] / ours["ts_us"]
    if ref.get("timing") == "cuda-events":
        return ref["us"] / ours["us"]
    return ref["wall_us"] / ours["wall_us"]


def _best_ref(recs, chosen):
    """The reference that fares best against ours: ORT Web's faster build, else torch."""
    refs = [r for r in recs if r["impl"] == "ort-web"] or \
        [r for r in recs if r["impl"] == "torch-cuda"]
    return min(refs, key=lambda r: like_for_like(r, chosen)) if refs else None


def summary_rows(records) -> list[dict]:
    """One row per (backend, shape): chosen vs copy, best variant, ORT Web / torch."""
    out = []
    keys = []
    for r in records:
        k = (r["backend"], tuple(r["shape"]))
        if k not in keys:
            keys.append(k)
    for backend, shape in keys:
        recs = [r for r in records if r["backend"] == backend and tuple(r["shape"]) == shape]
        chosen = next((r for r in recs if r["impl"] == "ours"
                       and r["variant"].startswith("chosen")), None)
        if chosen is None:
            continue
        variants = [r for r in recs if r["impl"] == "ours" and not r.get("part")
                    and not r["variant"].startswith("chosen")]
        best = min(variants, key=lambda r: r["us"]) if variants else chosen
        seed = next((r for r in variants if r["variant"] == "tree-64"), None)
        row = {"backend": backend, "shape": shape, "chosen": chosen, "best": best, "seed": seed,
               "copy": _best(recs, "copy"), "js": _best(recs, "js"),
               "ref": _best_ref(recs, chosen),
               "ort": [r for r in recs if r["impl"] == "ort-web"]}
        out.append(row)
    return out


def _mb(shape) -> str:
    b = 4 * shape[0] * shape[1]
    return f"{b / 2**20:.3g} MB" if b >= 2**20 else f"{b / 2**10:.3g} KB"


def markdown(records) -> str:
    rows = summary_rows(records)
    lines = []
    for backend in dict.fromkeys(r["backend"] for r in rows):
        sel = [r for r in rows if r["backend"] == backend]
        adapter = sel[0]["chosen"]["adapter"]
        timing = sel[0]["chosen"].get("timing", "?")
        lines += [f"**{backend}** — {adapter} (ours/copy timed with {timing})", ""]
        ref_name = "ORT Web best" if any(r["ort"] for r in sel) else "torch CUDA"
        lines.append(f"| shape | size | chosen variant | ours µs | GB/s | copy µs | ours / copy "
                     f"| best variant (µs) | seed tree-64 µs | plain JS µs | {ref_name} µs "
                     f"| ref / ours |")
        lines.append("|" + "---|" * 12)
        for r in sel:
            c, cp, ref = r["chosen"], r["copy"], r["ref"]
            ratio = f"{c['gbps'] / cp['gbps']:.2f}x" if cp else "-"
            refcell = f"{ref['us']:.1f} ({ref['variant'].replace('ort-web ', '')}, " \
                      f"{ref.get('timing', '?')})" if ref else "-"
            vs = f"{like_for_like(ref, c):.2f}x" if ref else "-"
            cells = [f"{r['shape'][0]}x{r['shape'][1]}", _mb(r["shape"]),
                     c["variant"].removeprefix("chosen "), f"{c['us']:.1f}", f"{c['gbps']:.1f}",
                     f"{cp['us']:.1f}" if cp else "-", ratio,
                     f"{r['best']['variant']} ({r['best']['us']:.1f})",
                     f"{r['seed']['us']:.1f}" if r["seed"] else "-",
                     f"{r['js']['us']:.1f}" if r["js"] else "-", refcell, vs]
            lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
        lines += _variant_table(records, backend)
    return "\n".join(lines)


def _variant_table(records, backend) -> list[str]:
    recs = [r for r in records if r["backend"] == backend]
    shapes = list(dict.fromkeys(tuple(r["shape"]) for r in recs))
    names = list(dict.fromkeys(r["variant"] for r in recs if not r["variant"].startswith("chosen")))
    lines = ["All measurements, µs per op (median; GPU timestamps / wall where both: the "
             "timestamps of a two-dispatch op leave out the gap between its passes):", "",
             "| variant | " + " | ".join(f"{a}x{b}" for a, b in shapes) + " |",
             "|---|" + "---|" * len(shapes)]
    for name in names:
        cells = []
        for s in shapes:
            r = next((r for r in recs if r["variant"] == name and tuple(r["shape"]) == s), None)
            both = r and "ts_us" in r
            cells.append("-" if not r else f"{r['ts_us']:.1f} / {r['wall_us']:.1f}" if both
                         else f"{r['us']:.1f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines + [""]


def plot(records, path: str) -> bool:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _log("matplotlib missing: no plot")
        return False
    rows = summary_rows(records)
    backends = list(dict.fromkeys(r["backend"] for r in rows))
    fig, axes = plt.subplots(1, len(backends), figsize=(7 * len(backends), 4.5), squeeze=False)
    for ax, backend in zip(axes[0], backends):
        sel = [r for r in rows if r["backend"] == backend]
        series = [("ours (chosen)", "chosen"), ("seed tree-64", "seed"), ("copy", "copy"),
                  ("plain JS", "js"), ("ORT Web / torch", "ref")]
        width = 0.8 / len(series)
        for i, (label, key) in enumerate(series):
            vals = [r[key]["gbps"] if r[key] else 0.0 for r in sel]
            ax.bar([j + i * width for j in range(len(sel))], vals, width, label=label)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(sel))])
        ax.set_xticklabels([f"{a}x{b}" for a, b in (r["shape"] for r in sel)], rotation=20)
        ax.set_ylabel("GB/s (read + write)")
        ax.set_title(f"{backend}: {sel[0]['chosen']['adapter'][:60]}", fontsize=9)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(backend="browser", shapes=None, output=None, plot_path=None, markdown_path=None,
         variants=None, ort=True) -> int:
    shapes = parse_shapes(shapes)
    variants = [v.strip() for v in variants.split(",")] if variants else None
    if backend == "native":
        records = run_native(shapes, variants)
    else:
        records = run_browser(shapes, variants, ort)
    text = markdown(records)
    print(text)
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(json.dumps(records, indent=1) + "\n")
        _log(f"wrote {output}")
    plot_path = plot_path or (str(Path(output).with_suffix(".png")) if output else
                              f"build/bench/rms_norm-{backend}.png")
    Path(plot_path).parent.mkdir(parents=True, exist_ok=True)
    if plot(records, plot_path):
        _log(f"wrote {plot_path}")
    if markdown_path:
        Path(markdown_path).write_text(text + "\n")
    return 0
