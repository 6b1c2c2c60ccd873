"""Torch's side of the vision bench (host only: torch). On the GPU machine's python3 (torch
with CUDA); here on CPU torch, to test it. fp32 with TF32 off everywhere (cuDNN's and the
matmuls'), batch 1.

``model_records``: the model bench/vision_models.build gives (the same seeded weights as
the exported program) in eval mode under inference_mode: eager, eager captured in a CUDA
graph (torch.cuda.graphs) and ``torch.compile`` (mode "reduce-overhead": inductor's kernels
in CUDA graphs), per image: the latency a caller waits for (the image copied from the
host, the forward, the output copied back; perf_counter) and the GPU time of the forward
alone (CUDA events around it, the input already on the device).
``conv_records``: torch.nn.functional.conv2d (cuDNN) at each shape, CUDA events around
many calls after a warm-up, as bench/rms_norm_bench.py times torch.
On CPU: perf_counter only, and compile only when asked (inductor builds C++ there).
"""

from __future__ import annotations

import statistics
import time

import vision_job
import vision_models

TARGET_S = 0.2  # per conv measurement, after warm-up


def setup(device: str) -> str:
    """TF32 off; the device's name for the records."""
    import torch

    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    torch.backends.cudnn.benchmark = True  # cuDNN picks its fastest algorithm per shape
    return torch.cuda.get_device_name() if device == "cuda" else "cpu"


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


WARMUP_S = 2.0


def _latency(fn, x_host, device: str, runs: int, warmup: int) -> tuple[list, list, object]:
    """(end-to-end ms per image, forward-only GPU ms per image (CUDA events; [] on CPU),
    the last output on the host)."""
    import torch

    x_dev = x_host.to(device)
    first, done = time.perf_counter(), 0
    # at least WARMUP_S too, as ours (bench/vision_job.py): clocks rise under load
    while done < warmup or time.perf_counter() - first < WARMUP_S:
        fn(x_host.to(device)).cpu()
        done += 1
    if device == "cuda":
        torch.cuda.synchronize()
    wall, gpu, out = [], [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        out = fn(x_host.to(device)).cpu()  # .cpu() waits for the work
        wall.append((time.perf_counter() - t0) * 1e3)
    if device == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        for _ in range(runs):
            start.record()
            fn(x_dev)
            end.record()
            end.synchronize()
            gpu.append(start.elapsed_time(end))
    return wall, gpu, out


def model_records(name: str, size: str, image, *, device: str | None = None, runs: int = 50,
                  warmup: int = 10, compile: bool | None = None, progress=print) -> dict:
    """Records of torch eager (and compiled) for model ``name`` fed ``image`` (a numpy
    array of the input's shape); their outputs as numpy arrays."""
    import numpy as np
    import torch

    device = device or default_device()
    adapter = setup(device)
    module, shape = vision_models.build(name, size)
    if list(image.shape) != list(shape):
        raise ValueError(f"{name} ({size}) takes {shape}; the image is {list(image.shape)}")
    module = module.to(device)
    x = torch.from_numpy(np.ascontiguousarray(image, dtype=np.float32))
    compile = device == "cuda" if compile is None else compile
    forms = [("torch-eager", lambda: module)]
    if device == "cuda":
        forms.append(("torch-cuda-graph", lambda: cuda_graph(module, x.to(device))))
    if compile:
        mode = "reduce-overhead" if device == "cuda" else "default"
        forms.append((f"torch-compile ({mode})", lambda: torch.compile(module, mode=mode)))
    base = {"adapter": adapter, "device": device, "version": f"torch {torch.__version__}",
            "model": name, "size": size, "input": list(shape)}
    records, outputs = [], {}
    with torch.inference_mode():
        for impl, make in forms:
            progress(f"{impl}: {warmup} warm-up runs, {runs} timed")
            t0 = time.perf_counter()
            try:
                wall, gpu, out = _latency(make(), x, device, runs, max(warmup, 3))
            except Exception as e:  # a compile failure must not lose eager's records
                progress(f"{impl} failed: {type(e).__name__}: {str(e).splitlines()[0][:300]}")
                records.append(dict(base, impl=impl, error=f"{type(e).__name__}: {e}"[:2000]))
                continue
            rec = dict(vision_job.spread(wall), impl=impl, ms=wall, **base,
                       first_s=time.perf_counter() - t0)
            if gpu:
                rec.update(gpu_ms=gpu, gpu_median_ms=statistics.median(gpu), timing="cuda-events")
            records.append(rec)
            outputs[impl] = out.numpy()
    return {"records": records, "outputs": outputs}


def cuda_graph(module, example):
    """``module`` captured in one CUDA graph (torch.cuda.graphs: no compiler needed, unlike
    torch.compile): a function that copies its input into the graph's and replays it."""
    import torch

    static_in = example.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up off the default stream, as capture wants
        for _ in range(3):
            module(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = module(static_in)

    def run(x):
        static_in.copy_(x)
        graph.replay()
        return static_out
    return run


def _time_cuda(fn) -> tuple[float, int]:
    import gpu_bench
    import torch

    return gpu_bench.cuda_us(torch, fn, TARGET_S, least=20)


def _time_cpu(fn) -> tuple[float, int]:
    fn()
    t0 = time.perf_counter()
    fn()
    iters = int(max(3, min(1000, TARGET_S / max(time.perf_counter() - t0, 1e-7))))
    times = []
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        times.append((time.perf_counter() - t0) * 1e6 / iters)
    return statistics.median(times), iters


def conv_records(convs, device: str | None = None, progress=print) -> list[dict]:
    """torch.nn.functional.conv2d at each shape (fp32, TF32 off, no bias)."""
    import torch

    device = device or default_device()
    adapter = setup(device)
    g = torch.Generator().manual_seed(0)
    out = []
    with torch.inference_mode():
        for conv in convs:
            x = torch.randn([1, conv.cin, conv.hw, conv.hw], generator=g).to(device)
            w = torch.randn([conv.cout, conv.cin, conv.k, conv.k], generator=g).to(device)

            def fn(x=x, w=w, conv=conv):
                return torch.nn.functional.conv2d(x, w, None, conv.stride, conv.pad)
            us, iters = (_time_cuda if device == "cuda" else _time_cpu)(fn)
            out.append({"impl": "torch-cudnn" if device == "cuda" else "torch-cpu",
                        "shape": conv.name, "kind": conv.kind, "us": us, "iters": iters,
                        "tflops": conv.flops / (us * 1e-6) / 1e12,
                        "timing": "cuda-events" if device == "cuda" else "wall",
                        "adapter": adapter, "version": f"torch {torch.__version__}"})
            progress(f"torch conv2d {conv.name}: {us:.1f} µs")
    return out
