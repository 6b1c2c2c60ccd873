"""What cooperative matrices (tensor cores) wgpu-native offers on this adapter, natively
(issue 20 item 4). Prints one JSON record and writes it to --output:

- the adapter, and whether it offers the ``cooperative-matrix`` feature (wgpu-native 29:
  8x8 f32 matrices only, on Vulkan where the driver lists such a configuration);
- for each configuration tried (8x8 f32; 16x16 f16 where shader-f16 is offered): whether
  its shader compiles, which of naga's load and store forms (``coopLoad`` /
  ``coopLoadT``, ``coopStore`` / ``coopStoreT``) give out = x · wᵀ for our layouts (x
  [M, K] and w [N, K] row-major, out [M, N]), and the product's largest error against
  float64 relative to the largest |out| (about 1e-7 for float32 sums, 1e-4 to 1e-3 where
  the hardware rounds the inputs to TF32 or f16);
- the time of 2048³ in a plain kernel (a subgroup of 32 lanes per 32 x 32 block of
  8 x 8 tiles, operands read from storage), as µs and TFLOP/s.

Standalone: wgpu and numpy only, none of pte_webgpu, so it runs on the lent GPU before
any decision is built on it. ``python bench/coop_probe.py --output coop.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import time

import numpy as np
import wgpu

FEATURE = "cooperative-matrix"


def shader(elem: str, size: int, tiles: int, load_a: str, load_b: str, store: str) -> str:
    """out = x · wᵀ, one workgroup of 32 lanes (a subgroup on NVIDIA) per (size * tiles)²
    block: tiles² accumulators, each step loading ``tiles`` tiles of x (rows) and of w
    (as the B operand: w's rows are its columns)."""
    mat = f"coop_mat{size}x{size}<{elem}"
    lines = ["enable f16;" if elem == "f16" else "", "enable wgpu_cooperative_matrix;",
             f"@group(0) @binding(0) var<storage, read> x: array<{elem}>;",
             f"@group(0) @binding(1) var<storage, read> w: array<{elem}>;",
             f"@group(0) @binding(2) var<storage, read_write> out: array<{elem}>;",
             "@group(0) @binding(3) var<uniform> dims: vec4<u32>;  // M, N, K",
             "@compute @workgroup_size(32)",
             "fn main(@builtin(workgroup_id) wid: vec3<u32>) {",
             "  let n = dims.y;", "  let k = dims.z;",
             f"  let m0 = wid.y * {size * tiles}u;", f"  let n0 = wid.x * {size * tiles}u;"]
    pairs = list(itertools.product(range(tiles), repeat=2))
    lines += [f"  var c{i}{j} = {mat}, C>();" for i, j in pairs]
    lines += [f"  for (var kk = 0u; kk < k; kk += {size}u) {{"]
    lines += [f"    let a{i} = {load_a}<{mat}, A>>(&x[(m0 + {i * size}u) * k + kk], k);"
              for i in range(tiles)]
    lines += [f"    let b{j} = {load_b}<{mat}, B>>(&w[(n0 + {j * size}u) * k + kk], k);"
              for j in range(tiles)]
    lines += [f"    c{i}{j} = coopMultiplyAdd(a{i}, b{j}, c{i}{j});" for i, j in pairs]
    lines += ["  }"]
    lines += [f"  {store}(c{i}{j}, &out[(m0 + {i * size}u) * n + n0 + {j * size}u], n);"
              for i, j in pairs]
    return "\n".join(lines + ["}", ""])


class Product:
    """One compiled form of the probe's kernel, run on x [M, K], w [N, K]."""

    def __init__(self, device, source: str, elem: str, block: int):
        self.device, self.elem, self.block = device, elem, block
        self.pipeline = device.create_compute_pipeline(
            layout="auto", compute={"module": device.create_shader_module(code=source),
                                    "entry_point": "main"})

    def buffers(self, x: np.ndarray, w: np.ndarray):
        d = self.device
        np_type = np.float16 if self.elem == "f16" else np.float32
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
        xs = d.create_buffer_with_data(data=x.astype(np_type).tobytes(), usage=usage)
        ws = d.create_buffer_with_data(data=w.astype(np_type).tobytes(), usage=usage)
        out = d.create_buffer(size=x.shape[0] * w.shape[0] * np.dtype(np_type).itemsize,
                              usage=usage)
        dims = d.create_buffer_with_data(
            data=np.array([x.shape[0], w.shape[0], x.shape[1], 0], np.uint32).tobytes(),
            usage=wgpu.BufferUsage.UNIFORM)
        group = d.create_bind_group(layout=self.pipeline.get_bind_group_layout(0), entries=[
            {"binding": i, "resource": {"buffer": b}} for i, b in enumerate((xs, ws, out, dims))])
        return group, out, (w.shape[0] // self.block, x.shape[0] // self.block)

    def run(self, group, grid, times: int = 1) -> None:
        enc = self.device.create_command_encoder()
        p = enc.begin_compute_pass()
        p.set_pipeline(self.pipeline)
        p.set_bind_group(0, group)
        for _ in range(times):
            p.dispatch_workgroups(*grid)
        p.end()
        self.device.queue.submit([enc.finish()])

    def result(self, out, m: int, n: int) -> np.ndarray:
        np_type = np.float16 if self.elem == "f16" else np.float32
        return np.frombuffer(self.device.queue.read_buffer(out), np_type).reshape(m, n)


def try_config(device, elem: str, size: int, tiles: int = 4) -> dict:
    """Which load/store forms compute x · wᵀ at this configuration, their error, and the
    2048³ time of the first that does."""
    rng = np.random.default_rng(7)
    m, n, k = 2 * size * tiles, 3 * size * tiles, 8 * size  # neither square nor symmetric
    x, w = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (n, k))
    if elem == "f16":
        x, w = x.astype(np.float16).astype(np.float64), w.astype(np.float16).astype(np.float64)
    else:
        x, w = x.astype(np.float32).astype(np.float64), w.astype(np.float32).astype(np.float64)
    want = x @ w.T
    record = {"config": f"{size}x{size} {elem}", "forms": []}
    working = None
    for load_a, load_b, store in itertools.product(("coopLoad", "coopLoadT"),
                                                   ("coopLoad", "coopLoadT"),
                                                   ("coopStore", "coopStoreT")):
        form = {"load_x": load_a, "load_w": load_b, "store": store}
        try:
            product = Product(device, shader(elem, size, tiles, load_a, load_b, store), elem,
                              size * tiles)
            group, out, grid = product.buffers(x, w)
            product.run(group, grid)
            got = product.result(out, m, n).astype(np.float64)
        except Exception as e:  # the compile or validation error is the finding
            form["error"] = f"{type(e).__name__}: {str(e)[:400]}"
            record["forms"].append(form)
            continue
        form["relative_error"] = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        form["correct"] = form["relative_error"] < (2e-2 if elem == "f16" else 1e-2)
        record["forms"].append(form)
        if form["correct"] and working is None:
            working = (product, form)
    if working is not None:
        record["works_with"] = working[1]
        record["timing_2048"] = time_2048(device, working[0])
    return record


def time_2048(device, product: Product, reps: int = 20) -> dict:
    """Wall time of reps back-to-back 2048³ products in one pass, after a warm-up."""
    rng = np.random.default_rng(1)
    size = 2048
    x, w = rng.uniform(-1, 1, (size, size)), rng.uniform(-1, 1, (size, size))
    group, out, grid = product.buffers(x, w)
    product.run(group, grid, 3)
    product.result(out, size, size)  # waits
    start = time.perf_counter()
    product.run(group, grid, reps)
    product.result(out, size, size)
    us = (time.perf_counter() - start) / reps * 1e6
    return {"us": round(us, 1), "tflops": round(2 * size ** 3 / us / 1e6, 2), "reps": reps}


def probe() -> dict:
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    info = {k: v for k, v in dict(adapter.info).items() if isinstance(v, (str, int))}
    features = sorted(str(f) for f in adapter.features)
    record = {"adapter": info, "wgpu": wgpu.__version__, "offered": FEATURE in features}
    if not record["offered"]:
        return record
    configs = [("f32", 8)] + ([("f16", 16)] if "shader-f16" in features else [])
    record["configs"] = []
    for elem, size in configs:
        wanted = [FEATURE] + (["shader-f16"] if elem == "f16" else [])
        try:
            device = adapter.request_device_sync(required_features=wanted)
        except Exception as e:
            record["configs"].append({"config": f"{size}x{size} {elem}",
                                      "device_error": f"{type(e).__name__}: {e}"[:400]})
            continue
        record["configs"].append(try_config(device, elem, size))
    return record


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--output", help="write the JSON record here too")
    args = ap.parse_args(argv)
    record = probe()
    text = json.dumps(record, indent=1)
    print(text)
    if args.output:
        with open(args.output, "w") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
