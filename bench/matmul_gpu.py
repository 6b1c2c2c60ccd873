"""The GPU side of ``pte-webgpu bench --op linear``: runs where the adapter is, in CPython
(native, wgpu) or inside Pyodide (browser). For one M x K x N shape and dtype it builds
our linear through the real op handler (``chosen``) and each candidate variant through
``matmul.record``, plus the copy kernel over the weight's bytes, and times each with
gpu_bench's Timer (GPU timestamps where the adapter has them, else wall time).
"""

from __future__ import annotations

import random
import struct

import gpu_bench
from pte_webgpu.gpu.recording import Recording
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import Graph, OpCall, TensorValue
from pte_webgpu.ops import matmul, matmul_choice
from pte_webgpu.runtime.build import BuildContext, Resources

OP = "aten.linear.default"


def _fill(device, buf, count: int, half: bool, seed: int) -> None:
    """Random values in [-1, 1), written in slices of at most 1 Mi elements (repeated)."""
    rnd = random.Random(seed)
    n = min(count, 1 << 20)
    chunk = struct.pack(f"<{n}{'e' if half else 'f'}", *(rnd.uniform(-1, 1) for _ in range(n)))
    chunk += bytes(-len(chunk) % 16)
    size = -(-count * (2 if half else 4) // 16) * 16  # writes in whole 16-byte units
    for off in range(0, size, len(chunk)):
        device.write_buffer(buf, chunk[:size - off], off)


async def bench_linear(device, m: int, k: int, n: int, half: bool = False, variants=None,
                       copies: bool = True) -> list[dict]:
    timer = gpu_bench.Timer(device)
    es = 2 if half else 4
    dt = dtypes.FLOAT16 if half else dtypes.FLOAT32
    graph = Graph(values=[TensorValue(dt, (m, k)), TensorValue(dt, (n, k)), TensorValue(dt, (n,)),
                          TensorValue(dt, (m, n))],
                  ops=[OpCall(OP, (0, 1, 2, 3))], input_ids=[0], output_ids=[3], constants=[])
    resources = Resources(device)
    records = []

    def pad(b):
        return b + (-b % 16)
    try:
        # Sized for float32 whatever the dtype: BuildContext binds tensors at that size.
        x = resources.buffer(pad(4 * m * k), "bench input")
        w = resources.buffer(pad(4 * n * k), "bench weight")
        b = resources.buffer(pad(4 * n), "bench bias")
        y = resources.buffer(pad(4 * m * n), "bench out")
        _fill(device, x, m * k, half, 1)
        _fill(device, w, n * k, half, 2)
        _fill(device, b, n, half, 3)
        ctx = BuildContext(device, graph, resources, Recording(), {}, "bench")
        ctx.buffers = {0: x, 1: w, 2: b, 3: y}
        ctx.half = lambda vid: half  # the bench's tensors are stored as its dtype
        op = graph.ops[0]
        nbytes = es * (m * k + n * k + m * n + n)
        flops = 2.0 * m * n * k
        ctx.begin_op(0, op)
        await matmul.build_linear(ctx, op)
        chosen = ctx.kernels[-1].get("variant", "?")
        # the chosen form is measured last: the first measurement after new buffers
        # read up to 3x slower on the H200 at some shapes, the same kernel later did not.
        # An op's dispatches all (split K: the tiles, then their sum)
        chosen_steps = list(ctx.recording.steps)
        todo = []
        names = variants or [v.name for v in matmul_choice.candidates(device.info, m, k, half)]
        binds = [(0, 0), (1, 1), (2, 3), (4, 2)]
        for name in names:
            v = matmul_choice.parse(name).for_k(k).for_dtype(half)
            if matmul_choice.supported(v, device.info):
                continue
            ctx.begin_op(0, op)
            first = len(ctx.recording.steps)
            await matmul.record(ctx, op, v, binds, m, n, k, True, half)
            todo.append((v.name, ctx.recording.steps[first:]))
        todo.append(("chosen " + chosen, chosen_steps))
        for name, step in todo:
            rec = await gpu_bench.measure(timer, step, nbytes)
            records.append(dict(rec, impl="ours", variant=name,
                                tflops=flops / (rec["us"] * 1e-6) / 1e12))
        if copies:  # the copy kernel over the weight's bytes (read them, write as many)
            wbytes = pad(es * n * k)
            dst = resources.buffer(wbytes, "bench copy")
            records += await gpu_bench.copy_records(device, timer, w, dst, wbytes)
    finally:
        resources.release()
    adapter = device.info.summary()
    for r in records:
        r.update(backend=device.info.backend, adapter=adapter, shape=[m, k, n],
                 dtype="float16" if half else "float32")
    return records
