"""The GPU side of ``pte-webgpu bench --op linear --dtypes q4,q4f16``: 4-bit groupwise
weights (et_vk.linear_q4gsw, ops/linear_q4.py) through the real op handler (``chosen``)
and each candidate variant through ``linear_q4.record``, plus the copy kernel over the
packed weight's bytes, timed with gpu_bench's Timer. Activations float32 (``q4``) or
float16 (``q4f16``, adapters with shader-f16), scales in the activations' type.
"""

from __future__ import annotations

import random
import struct

import gpu_bench
from matmul_gpu import _fill
from pte_webgpu.gpu.recording import Recording
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import Graph, Null, OpCall, Scalar, TensorValue
from pte_webgpu.ops import linear_q4, linear_q4_choice
from pte_webgpu.runtime.build import BuildContext, Resources
from pte_webgpu.runtime.storage import Storage

OP = "et_vk.linear_q4gsw.default"


def _packed(device, buf, nbytes: int, seed: int) -> None:
    """Random nibbles: the kernels' time does not depend on the weights' values."""
    rnd = random.Random(seed)
    chunk = bytes(rnd.randrange(256) for _ in range(min(nbytes, 1 << 20)))
    chunk += bytes(-len(chunk) % 16)
    size = -(-nbytes // 16) * 16
    for off in range(0, size, len(chunk)):
        device.write_buffer(buf, chunk[:size - off], off)


async def bench_linear_q4(device, m: int, k: int, n: int, half: bool = False, variants=None,
                          group: int = 32, copies: bool = True) -> list[dict]:
    if k % 8 or k % group:
        raise ValueError(f"q4 bench: K = {k} must be a multiple of 8 and of the group {group}")
    timer = gpu_bench.Timer(device)
    es = 2 if half else 4
    dt = dtypes.FLOAT16 if half else dtypes.FLOAT32
    groups, width = k // group, k // 2
    graph = Graph(values=[TensorValue(dt, (m, k)), TensorValue(dtypes.UINT8, (n, width)),
                          TensorValue(dt, (groups, n)), Scalar("int", group), Null(),
                          TensorValue(dt, (m, n))],
                  ops=[OpCall(OP, (0, 1, 2, 3, 4, 5))], input_ids=[0], output_ids=[5],
                  constants=[])
    resources = Resources(device)
    records = []

    def pad(b):
        return b + (-b % 16)
    try:
        x = resources.buffer(pad(4 * m * k), "bench input")
        w = resources.buffer(pad(n * width), "bench packed weight")
        s = resources.buffer(pad(4 * groups * n), "bench scales")
        y = resources.buffer(pad(4 * m * n), "bench out")
        _fill(device, x, m * k, half, 1)
        _packed(device, w, n * width, 2)
        rnd = random.Random(3)
        scale_bytes = struct.pack(f"<{groups * n}{'e' if half else 'f'}",
                                  *(rnd.uniform(0.01, 0.1) for _ in range(groups * n)))
        device.write_buffer(s, scale_bytes + bytes(-len(scale_bytes) % 4))
        ctx = BuildContext(device, graph, resources, Recording(), {}, "bench",
                           storage=Storage(half=half))
        ctx.buffers = {0: x, 1: w, 2: s, 5: y}
        ctx.half = lambda vid: half and vid != 1  # the bench's float tensors are its dtype
        # the scales as a constant would be (the wide form relays them by column at load)
        ctx.constant_bytes = lambda vid: scale_bytes if vid == 2 else None
        op = graph.ops[0]
        wbytes = n * width + es * groups * n  # what a product must read besides x
        nbytes = es * (m * k + m * n) + wbytes
        flops = 2.0 * m * n * k
        ctx.begin_op(0, op)
        await linear_q4.build_q4gsw(ctx, op)
        chosen = ctx.kernels[-1].get("variant", "?")
        chosen_step = ctx.recording.steps[-1]
        shape = linear_q4.q4gsw_shape(graph.values, op.args, group)
        binds = [(0, 0), (1, 1), (2, 5), (4, 2), (5, 2)]
        by_column = linear_q4.column_scales(ctx, op, 2, shape, None)
        wide_binds = binds[:-1] + [(5, by_column)]
        todo = []
        names = variants or [v.name for v in linear_q4_choice.VARIANTS.candidates(
            device.info, m=m, n=n, k=k, half=half)]
        for name in names:
            v = linear_q4_choice.parse(name)
            if linear_q4_choice.supported(v, device.info):
                continue
            ctx.begin_op(0, op)
            await linear_q4.record(ctx, op, v, wide_binds if v.kind in linear_q4.WIDE_KINDS else binds,
                                   shape, False, half, False)
            todo.append((v.name, ctx.recording.steps[-1]))
        todo.append(("chosen " + chosen, chosen_step))
        for name, step in todo:
            rec = await gpu_bench.measure(timer, step, nbytes)
            records.append(dict(rec, impl="ours", variant=name,
                                tflops=flops / (rec["us"] * 1e-6) / 1e12))
        if copies:  # the copy kernel over the packed weight's bytes (read, write as many)
            cbytes = pad(n * width)
            dst = resources.buffer(cbytes, "bench copy")
            records += await gpu_bench.copy_records(device, timer, w, dst, cbytes)
    finally:
        resources.release()
    adapter = device.info.summary()
    for r in records:
        r.update(backend=device.info.backend, adapter=adapter, shape=[m, k, n],
                 dtype="q4f16" if half else "q4", group=group)
    return records
