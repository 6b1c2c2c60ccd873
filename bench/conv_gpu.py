"""The GPU side of ``pte-webgpu bench --op conv``: one convolution through the real op
handler (``chosen``) and each candidate variant of the conv family through
``conv.record`` (ops/conv_choice.py ``candidates``), plus the copy kernel over the
input's bytes, timed with gpu_bench's Timer. float32, or float16 (adapters with
shader-f16).
"""

from __future__ import annotations

import gpu_bench
from matmul_gpu import _fill
from pte_webgpu.gpu.recording import Recording
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import Graph, ListValue, OpCall, Scalar, TensorValue
from pte_webgpu.ops import conv, conv_choice
from pte_webgpu.runtime.build import BuildContext, Resources
from pte_webgpu.runtime.storage import Storage

OP = "aten.convolution.default"


def conv_spec(cin: int, h: int, w: int, cout: int, k: int, stride: int, pad: int,
              groups: int = 1, batch: int = 1) -> conv.Conv:
    """A square-kernel 2-D convolution's sizes (conv.conv_dims checks them)."""
    oh, ow = ((s + 2 * pad - k) // stride + 1 for s in (h, w))
    return conv.conv_dims((batch, cin, h, w), (cout, cin // groups, k, k),
                          (batch, cout, oh, ow), (cout,), [stride] * 2, [pad] * 2, [1, 1],
                          False, [0, 0], groups, "bench")


async def bench_conv(device, c: conv.Conv, half: bool = False, variants=None,
                     copies: bool = True) -> list[dict]:
    timer = gpu_bench.Timer(device)
    es = 2 if half else 4
    dt = dtypes.FLOAT16 if half else dtypes.FLOAT32
    x_shape, w_shape = (c.batch, c.cin, c.h, c.w), (c.cout, c.cin // c.groups, c.kh, c.kw)
    o_shape = (c.batch, c.cout, c.oh, c.ow)
    graph = Graph(values=[TensorValue(dt, x_shape), TensorValue(dt, w_shape),
                          TensorValue(dt, (c.cout,)), ListValue("int_list", c.stride),
                          ListValue("int_list", c.padding), ListValue("int_list", c.dilation),
                          Scalar("bool", False), ListValue("int_list", (0, 0)),
                          Scalar("int", c.groups), TensorValue(dt, o_shape)],
                  ops=[OpCall(OP, tuple(range(10)))], input_ids=[0], output_ids=[9],
                  constants=[])
    numel = [x_shape[0] * c.cin * c.h * c.w, c.cout * w_shape[1] * c.k, c.cout,
             c.batch * c.cout * c.oh * c.ow]
    resources = Resources(device)
    records = []

    def pad(b):
        return b + (-b % 16)
    try:
        bufs = [resources.buffer(pad(es * n), f"bench {i}") for i, n in enumerate(numel)]
        for i, (buf, n) in enumerate(zip(bufs[:3], numel)):
            _fill(device, buf, n, half, i + 1)
        ctx = BuildContext(device, graph, resources, Recording(), {}, "bench",
                           storage=Storage(half=half))
        ctx.buffers = {0: bufs[0], 1: bufs[1], 2: bufs[2], 9: bufs[3]}
        op = graph.ops[0]
        nbytes = es * sum(numel)
        flops = 2.0 * numel[3] * c.cin // c.groups * c.k
        ctx.begin_op(0, op)
        await conv.build(ctx, op)
        chosen = ctx.kernels[-1].get("variant", "?")
        chosen_steps = list(ctx.recording.steps)
        ids = {0: 0, 1: 1, 2: 9, 3: 2}
        todo = []
        shape = c.shape(half)
        names = variants or [v.name for v in conv_choice.VARIANTS.candidates(device.info,
                                                                              **shape)]
        for name in names:
            v = conv_choice.VARIANTS.adapt(conv_choice.parse(name), **shape)
            if conv_choice.VARIANTS.why_not(v, device.info, **shape):
                continue
            before = len(ctx.recording.steps)
            ctx.begin_op(0, op)
            await conv.record(ctx, op, v, c, ids, True, float("-inf"), float("inf"), half)
            todo.append((v.name, ctx.recording.steps[before:]))
        todo.append(("chosen " + chosen, chosen_steps))
        for name, steps in todo:
            rec = await gpu_bench.measure(timer, steps, nbytes)
            records.append(dict(rec, impl="ours", variant=name,
                                tflops=flops / (rec["us"] * 1e-6) / 1e12))
        if copies:  # the copy kernel over the input's bytes (read, write as many)
            cbytes = pad(es * numel[0])
            dst = resources.buffer(cbytes, "bench copy")
            records += await gpu_bench.copy_records(device, timer, bufs[0], dst, cbytes)
    finally:
        resources.release()
    adapter = device.info.summary()
    for r in records:
        r.update(backend=device.info.backend, adapter=adapter,
                 shape=[c.batch, c.cin, c.h, c.w, c.cout, c.kh, c.stride[0], c.padding[0],
                        c.groups], dtype="float16" if half else "float32")
    return records
