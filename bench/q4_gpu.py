"""4-bit weight linears (et_vk.linear_q4gsw) timed beside our float32 linear of the same
shape and the copy kernel over the packed weight's bytes, on whatever adapter wgpu finds
(native; gpu_bench's Timer: GPU timestamps where the adapter has them, else wall time).

    python bench/q4_gpu.py [M K N ...]   (default: decode shapes 1x4096x4096, 1x576x49152,
                                          1x576x1536, 1x1536x576)
Prints one JSON record per line: impl ("q4" variant, "f32" our float linear, "copy").
"""

from __future__ import annotations

import asyncio
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_bench  # noqa: E402
import matmul_gpu  # noqa: E402
from pte_webgpu.gpu.recording import Dispatch, Recording, fold_grid  # noqa: E402
from pte_webgpu.model import dtypes  # noqa: E402
from pte_webgpu.model.graph import Graph, Null, OpCall, Scalar, TensorValue  # noqa: E402
from pte_webgpu.ops import linear_q4  # noqa: E402
from pte_webgpu.ops.linear_q4_choice import VARIANTS, parse  # noqa: E402
from pte_webgpu.runtime.build import BuildContext, Resources  # noqa: E402

GROUP = 32


async def bench_q4(device, m: int, k: int, n: int, names=None) -> list[dict]:
    timer = gpu_bench.Timer(device)
    f32, groups = dtypes.FLOAT32, k // GROUP
    graph = Graph([TensorValue(f32, (m, k)), TensorValue(dtypes.UINT8, (n, k // 2)),
                   TensorValue(f32, (groups, n)), Scalar("int", GROUP), Null(),
                   TensorValue(f32, (m, n))],
                  [OpCall(linear_q4.Q4GSW, (0, 1, 2, 3, 4, 5))], [0], [5], [])
    resources, records = Resources(device), []
    try:
        x, w = resources.buffer(4 * m * k, "x"), resources.buffer(n * k // 2, "w")
        s, y = resources.buffer(4 * groups * n, "s"), resources.buffer(4 * m * n, "y")
        matmul_gpu._fill(device, x, m * k, False, 1)
        matmul_gpu._fill(device, w, n * k // 8, False, 2)  # any bits are 4-bit weights
        device.write_buffer(s, bytes(4 * groups * n))
        ctx = BuildContext(device, graph, resources, Recording(), {}, "bench")
        ctx.buffers = {0: x, 1: w, 2: s, 5: y}
        op = graph.ops[0]
        shape = linear_q4.q4gsw_shape(graph.values, op.args, GROUP)
        nbytes = 4 * m * k + n * k // 2 + 4 * groups * n + 4 * m * n
        chosen = VARIANTS.choose(device.info.traits, m=m, n=n, k=k)
        todo = names or sorted({v.name for v in VARIANTS.candidates(device.info, m=m)}
                               | {chosen.name})
        for name in todo:
            v = parse(name)
            if VARIANTS.why_not(v, device.info):
                continue
            ctx.begin_op(0, op)
            await linear_q4.record(ctx, op, v, [(0, 0), (1, 1), (2, 5), (4, 2), (5, 2)],
                                   shape, False, False, False)
            rec = await gpu_bench.measure(timer, ctx.recording.steps[-1], nbytes)
            records.append(dict(rec, impl="q4", variant=name, chosen=name == chosen.name))
        dst = resources.buffer(n * k // 2, "copy")
        wg, per = gpu_bench.COPY_VARIANTS["copy4-256"]
        pipe = await device.create_pipeline(gpu_bench.COPY_WGSL, "main",
                                            {"wg_size": wg, "per": per}, "copy")
        group = device.bind_group(pipe, [(0, w, n * k // 2), (1, dst, n * k // 2)], "copy")
        grid = fold_grid(-(-(n * k // 2) // (16 * wg * per)),
                         device.limit("maxComputeWorkgroupsPerDimension", 65535))
        rec = await gpu_bench.measure(timer, Dispatch(pipe, group, grid, "copy"), n * k)
        records.append(dict(rec, impl="copy", variant="copy4-256"))
    finally:
        resources.release()
    f32_recs = await matmul_gpu.bench_linear(device, m, k, n, copies=False, variants=[])
    records += [dict(r, impl="f32") for r in f32_recs if r["variant"].startswith("chosen")]
    for r in records:
        r.update(shape=[m, k, n], adapter=device.info.summary())
    return records


async def main(argv) -> None:
    from pte_webgpu.gpu.native import NativeDevice

    shapes = [tuple(int(v) for v in argv[i:i + 3]) for i in range(0, len(argv), 3)] or [
        (1, 4096, 4096), (1, 576, 49152), (1, 576, 1536), (1, 1536, 576)]
    device = await NativeDevice.create()
    for m, k, n in shapes:
        for r in await bench_q4(device, m, k, n):
            print(json.dumps({key: r[key] for key in ("shape", "impl", "variant", "us", "gbps",
                                                     "timing", "adapter") if key in r}
                             | ({"chosen": True} if r.get("chosen") else {})), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
