"""``pte-webgpu bench --op linear``: our linear (as chosen and each candidate variant)
against the copy kernel over the weight's bytes and torch's CUDA linear (native, where
present), float32 and float16.

    pte-webgpu bench --op linear [--backend browser|native] [--shapes 1x4096x4096,...]
                     [--dtypes float32,float16] [--output F.json] [--plot F.png]
                     [--markdown F.md] [--variants V,...]

Shapes are MxKxN: input [M, K], weight [N, K]. Records: {"backend", "adapter", "shape":
[M, K, N], "dtype", "impl": "ours"|"copy"|"torch-cuda", "variant", "us", "gbps" (bytes
of input, weight, bias and output over the time; the copy kernel: 2x the weight's bytes),
"tflops"}. Timing as in the rms_norm bench (bench/gpu_bench.py). torch runs with TF32 off.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_SHAPES = [(1, 4096, 4096), (1, 576, 49152), (1, 576, 1536), (1, 1536, 576),
                  (64, 576, 1536), (64, 1536, 576), (256, 576, 1536), (256, 1536, 576),
                  (2048, 2048, 2048)]
TARGET_S = 0.05  # wall time aimed at per measurement


def parse_shapes(text: str | None) -> list[tuple[int, int, int]]:
    if not text:
        return list(DEFAULT_SHAPES)
    out = []
    for part in text.split(","):
        dims = part.strip().lower().split("x")
        if len(dims) != 3 or not all(d.isdigit() and int(d) > 0 for d in dims):
            raise ValueError(f"bad shape {part!r}: use MxKxN, e.g. 1x4096x4096")
        out.append(tuple(int(d) for d in dims))
    return out


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


Q4_DTYPES = ("q4", "q4f16")  # 4-bit weights (group 32), float32 / float16 activations


def _import_gpu_side():
    sys.path.insert(0, str(HERE))
    try:
        import gpu_bench
        import linear_q4_gpu
        import matmul_gpu
    finally:
        sys.path.remove(str(HERE))
    gpu_bench.TARGET_S = TARGET_S
    return matmul_gpu, linear_q4_gpu


def run_native(shapes, dtypes, variants=None) -> list[dict]:
    matmul_gpu, linear_q4_gpu = _import_gpu_side()
    import gpu_bench

    def case(m, k, n, dt):
        if dt in Q4_DTYPES:
            return lambda device: linear_q4_gpu.bench_linear_q4(device, m, k, n, dt == "q4f16",
                                                                variants)
        return lambda device: matmul_gpu.bench_linear(device, m, k, n, dt == "float16",
                                                      variants)
    records = gpu_bench.run_native([(f"{m}x{k}x{n} {dt}", case(m, k, n, dt))
                                    for m, k, n in shapes for dt in dtypes], _log)
    adapter = records[0]["adapter"] if records else "?"
    return records + torch_cuda(shapes, dtypes, adapter)


def torch_cuda(shapes, dtypes, adapter: str) -> list[dict]:
    _import_gpu_side()
    import gpu_bench  # loaded by _import_gpu_side

    torch = gpu_bench.cuda_torch()
    if torch is None:
        return []
    out = []
    name = torch.cuda.get_device_name()
    for m, k, n in shapes:
        for dt in dtypes:
            if dt in Q4_DTYPES:
                continue  # torch has no CUDA 4-bit linear of this layout to set beside it
            t = getattr(torch, dt)
            x = torch.rand(m, k, device="cuda", dtype=t) * 2 - 1
            w = torch.rand(n, k, device="cuda", dtype=t) * 2 - 1
            b = torch.rand(n, device="cuda", dtype=t) * 2 - 1
            us, iters = gpu_bench.cuda_us(
                torch, lambda: torch.nn.functional.linear(x, w, b), TARGET_S)
            es = 2 if dt == "float16" else 4
            nbytes = es * (m * k + n * k + m * n + n)
            out.append({"backend": "native", "adapter": adapter, "shape": [m, k, n],
                        "dtype": dt, "impl": "torch-cuda",
                        "variant": f"torch {torch.__version__} ({name}, TF32 off)",
                        "us": us, "wall_us": us, "gbps": nbytes / (us * 1e-6) / 1e9,
                        "tflops": 2.0 * m * n * k / (us * 1e-6) / 1e12,
                        "timing": "cuda-events", "iters": iters})
    return out


_PAGE_SETUP = """
import sys, types
for _name, _src in (("gpu_bench", _SRC_GPU), ("matmul_gpu", _SRC_MM), ("linear_q4_gpu", _SRC_Q4)):
    _m = types.ModuleType(_name)
    sys.modules[_name] = _m
    exec(compile(_src, f"bench/{_name}.py", "exec"), _m.__dict__)
sys.modules["gpu_bench"].TARGET_S = %r
import matmul_gpu, linear_q4_gpu
from pte_webgpu.gpu.browser import BrowserDevice
_bench_device = await BrowserDevice.create()
_bench_device.info.summary()
"""


def run_browser(shapes, dtypes, variants=None) -> list[dict]:
    from pte_webgpu.chromium.dist import ensure_dist
    from pte_webgpu.chromium.server import StaticServer
    from pte_webgpu.chromium.session import BrowserSession

    dist = ensure_dist(REPO, log=_log)
    mounts = {"/": REPO / "web", "/pyodide/": dist, "/bench/": HERE}
    records: list[dict] = []
    with StaticServer(mounts) as server, \
            BrowserSession(server.url, harness="bench.html", timeout_ms=600_000) as session:
        session.page.set_default_timeout(600_000)
        session.run_python(f"_SRC_GPU = {(HERE / 'gpu_bench.py').read_text()!r}")
        session.run_python(f"_SRC_MM = {(HERE / 'matmul_gpu.py').read_text()!r}")
        session.run_python(f"_SRC_Q4 = {(HERE / 'linear_q4_gpu.py').read_text()!r}")
        _log(f"adapter: {session.run_python(_PAGE_SETUP % TARGET_S)}")
        for m, k, n in shapes:
            for dt in dtypes:
                t0 = time.perf_counter()
                fn = "linear_q4_gpu.bench_linear_q4" if dt in Q4_DTYPES else "matmul_gpu.bench_linear"
                records += session.run_python(
                    f"await {fn}(_bench_device, {m}, {k}, {n}, "
                    f"{dt in ('float16', 'q4f16')}, {variants!r})")
                _log(f"  {m}x{k}x{n} {dt}: {time.perf_counter() - t0:.1f} s")
    return records


# --- report ---------------------------------------------------------------------------------
def summary_rows(records) -> list[dict]:
    """One row per (backend, shape, dtype): chosen, best variant, copy, torch."""
    keys = list(dict.fromkeys((r["backend"], tuple(r["shape"]), r["dtype"]) for r in records))
    out = []
    for key in keys:
        recs = [r for r in records if (r["backend"], tuple(r["shape"]), r["dtype"]) == key]
        ours = [r for r in recs if r["impl"] == "ours"]
        chosen = next((r for r in ours if r["variant"].startswith("chosen")), None)
        if chosen is None:
            continue
        others = [r for r in ours if r is not chosen]
        pick = lambda impl: min((r for r in recs if r["impl"] == impl),  # noqa: E731
                                key=lambda r: r["us"], default=None)
        out.append({"key": key, "chosen": chosen, "copy": pick("copy"), "torch": pick("torch-cuda"),
                    "best": min(others, key=lambda r: r["us"]) if others else chosen})
    return out


def markdown(records) -> str:
    lines = []
    rows = summary_rows(records)
    for backend in dict.fromkeys(r["key"][0] for r in rows):
        sel = [r for r in rows if r["key"][0] == backend]
        c0 = sel[0]["chosen"]
        lines += [f"**{backend}** — {c0['adapter']} (ours/copy timed with {c0['timing']})", "",
                  "| M x K x N | dtype | chosen | ours µs | GB/s | TFLOP/s | copy GB/s | "
                  "ours / copy | one pass: ours µs, / copy | best variant (µs) | torch CUDA µs | "
                  "torch / ours |",
                  "|" + "---|" * 12]
        for r in sel:
            c, cp, t, b = r["chosen"], r["copy"], r["torch"], r["best"]
            shape, dt = r["key"][1], r["key"][2]
            lines.append("| " + " | ".join([
                "x".join(map(str, shape)), dt, c["variant"].removeprefix("chosen "),
                f"{c['us']:.1f}", f"{c['gbps']:.0f}", f"{c['tflops']:.2f}",
                f"{cp['gbps']:.0f}" if cp else "-",
                f"{c['gbps'] / cp['gbps']:.2f}x" if cp else "-",
                _one_pass(c, cp),
                f"{b['variant']} ({b['us']:.1f})",
                f"{t['us']:.1f}" if t else "-",
                f"{t['us'] / c['us']:.2f}x" if t else "-"]) + " |")
        lines.append("")
    return "\n".join(lines)


def _one_pass(ours, copy) -> str:
    """Times with the op repeated back to back in one timed pass (no per-pass floor) and
    the bandwidth ratio to the copy kernel timed the same way."""
    if "pass_us" not in ours:
        return "-"
    text = f"{ours['pass_us']:.1f}"
    if copy and copy.get("pass_us"):
        # GB/s ratio: each one's bytes over its own time
        ratio = (ours["gbps"] * ours["us"] / ours["pass_us"]) / (copy["gbps"] * copy["us"]
                                                                  / copy["pass_us"])
        text += f", {ratio:.2f}x"
    return text


def plot(records, path: str) -> bool:
    """Decode shapes (M <= 8) as GB/s, the others as TFLOP/s: ours chosen, best variant,
    copy, torch. matplotlib only here (pip install matplotlib)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        _log("matplotlib missing (pip install matplotlib): no plot")
        return False
    rows = summary_rows(records)
    panels = [("decode (matrix-vector): GB/s", [r for r in rows if r["key"][1][0] <= 8], "gbps"),
              ("prefill / matrix-matrix: TFLOP/s", [r for r in rows if r["key"][1][0] > 8],
               "tflops")]
    panels = [p for p in panels if p[1]]
    fig, axes = plt.subplots(1, len(panels), figsize=(8 * len(panels), 5), squeeze=False)
    for ax, (title, sel, unit) in zip(axes[0], panels):
        labels = [f"{'x'.join(map(str, r['key'][1]))}\n{r['key'][2]}" for r in sel]
        series = [("ours (chosen)", "chosen"), ("ours best variant", "best"),
                  ("copy kernel", "copy"), ("torch CUDA", "torch")]
        width = 0.8 / len(series)
        for i, (name, key) in enumerate(series):
            vals = [(r[key] or {}).get(unit, 0) if not (key == "copy" and unit == "tflops")
                    else 0 for r in sel]
            if any(vals):
                ax.bar([j + i * width for j in range(len(sel))], vals, width, label=name,
                       color=f"C{i}")
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(sel))], labels, fontsize=7,
                      rotation=30)
        if unit == "tflops":
            ax.set_yscale("log")  # torch's float16 runs on tensor cores: far above the rest
        ax.set_title(f"{sel[0]['chosen']['backend']}: {title}")
        ax.legend(fontsize=8)
    fig.suptitle(rows[0]["chosen"]["adapter"][:110], fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def main(backend="native", shapes=None, output=None, plot_path=None, markdown_path=None,
         variants=None, dtypes=("float32", "float16")) -> int:
    shapes = parse_shapes(shapes) if isinstance(shapes, str) or shapes is None else shapes
    variants = [v.strip() for v in variants.split(",")] if isinstance(variants, str) else variants
    records = (run_browser if backend == "browser" else run_native)(shapes, dtypes, variants)
    text = markdown(records)
    print(text)
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(json.dumps(records, indent=1))
        _log(f"wrote {output}")
    if markdown_path:
        Path(markdown_path).write_text(text)
    plot_path = plot_path or (str(Path(output).with_suffix(".png")) if output else
                              str(REPO / "build" / "bench" / "matmul.png"))
    Path(plot_path).parent.mkdir(parents=True, exist_ok=True)
    if plot(records, plot_path):
        _log(f"wrote {plot_path}")
    return 0
