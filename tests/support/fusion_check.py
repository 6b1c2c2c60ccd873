"""One test decoder run with load-time fusion on and off (runtime/fusion.py, option fuse):
a prefill of many rows, then decode steps, the logits of both builds compared. Pure Python
on pte_webgpu's own Tensor type (no numpy), so the same code runs natively and, sent as
text, inside the Pyodide page.

``await fusion_report(make_runtime, pte_bytes, vocab, prompt_len, steps)`` returns a
dict: per execute the largest absolute difference of fused and unfused logits and the
largest logit; per build the dispatches a decode step ran (non-empty grids), its copies
made by reshapes,
the bytes of the method's buffers (its shared scratch buffers apart: one pair, not per
layer, for the RoPE fold's prefill) and the fused ops of method.kernels by kind.
"""

import struct

import pte_webgpu
from pte_webgpu.model.tensor import Tensor
from pte_webgpu.ops import matmul_choice
from pte_webgpu.runtime.fusion import VIEWS
from pte_webgpu.runtime.method import gpu_work


def _ids(values):
    return Tensor(struct.pack(f"<{len(values)}q", *values), (1, len(values)), "int64")


def _pos(p):
    return Tensor(struct.pack("<q", p), (1,), "int64")


def _floats(t):
    data = t.tobytes()
    return struct.unpack(f"<{len(data) // t.dtype.itemsize}{t.dtype.struct_code}", data)


async def _run(rt, pte, calls):
    program = await rt.load_program(pte)
    try:
        method = program.load_method("forward")
        outs = []
        for call in calls:
            outs.append(_floats((await method.execute(call, as_numpy=False))[0]))
        steps = gpu_work(method).recording.steps  # as the last (decode) step ran
        ran = sum(1 for s in steps if hasattr(s, "grid") and s.grid[0] * s.grid[1] * s.grid[2])
        copies = sum(1 for s in steps if type(s).__name__ == "Copy" and s.label in VIEWS)
        # a build's shared scratch (one per method, not per layer) counted apart
        nbytes = sum(b.size for b in method._resources.buffers
                     if not b.label.startswith("scratch: "))
        fused = {}
        for k in method.kernels:
            if "fused" in k:
                fused[str(k["fused"])] = fused.get(str(k["fused"]), 0) + 1
        return outs, ran, fused, copies, nbytes
    finally:
        program.close()


async def fusion_report(make_runtime, pte, vocab, prompt_len, steps):
    prompt = [(7 * i + 3) % vocab for i in range(prompt_len)]
    calls = [[_ids(prompt), _pos(0)]]
    calls += [[_ids([(5 * k + 1) % vocab]), _pos(prompt_len + k)] for k in range(steps)]
    got, cpu = {}, False
    for fuse in (True, False):
        rt = await make_runtime({"fuse": fuse})
        try:
            got[fuse] = await _run(rt, pte, calls)
            cpu = matmul_choice.is_cpu(rt.adapter.traits)
        finally:
            rt.close()
    (fused, unfused) = (got[True][0], got[False][0])
    return {"diffs": [max(abs(a - b) for a, b in zip(x, y)) for x, y in zip(fused, unfused)],
            "scale": max(abs(v) for row in unfused for v in row),
            "exact": fused == unfused, "cpu": cpu,
            "dispatches": {"fused": got[True][1], "unfused": got[False][1]},
            "fused_ops": {"fused": got[True][2], "unfused": got[False][2]},
            "copies": {"fused": got[True][3], "unfused": got[False][3]},
            "buffer_bytes": {"fused": got[True][4], "unfused": got[False][4]}}


async def native_runtime(options):
    return await pte_webgpu.Runtime.create("native", options=options)


def saved_dispatches(report, layers: int, per_layer: int, final: int) -> int:
    """Dispatches a fused decode step saves: ``per_layer`` a layer and ``final`` for the
    final norm on GPUs; where the matmul rule is a CPU adapter's, the norms and the SwiGLU
    chain stay their own dispatch inside norm_linear and gated_linear (ops/matmul.py
    takes_prologue): 3 a layer fewer, and the final one."""
    return (per_layer - 3) * layers if report["cpu"] else per_layer * layers + final
