"""Run one test decoder (tests/fixtures/decoders) step by step and measure it against
eager torch's stepwise reference. Pure Python on pte_webgpu's own Tensor type (no numpy),
so the same code runs natively and, sent as text, inside the Pyodide page.

``await decoder_report(rt, pte_bytes, npz_bytes)`` returns a dict: per step the largest
absolute error and the argmax of every logits row (ours, torch's); the error of step 0
run again after ``method.reset()``; and, for a program with state, the error of step 1
run right after the reset without step 0 (large when the state really carries over).
A program that does not load gives ``{"unsupported": message}``.
"""

import struct

import pte_webgpu
from pte_webgpu.app import steps
from pte_webgpu.formats import npy

# the linears of a run: on their own, or fused (runtime/fusion.py)
LINEARS = ("aten.linear.default", "pte_webgpu.fused_linear", "et_vk.linear_q4gsw.default",
           "et_vk.linear_qcs4w.default", "pte_webgpu.fused_linear_q4gsw",
           "pte_webgpu.norm_linear", "pte_webgpu.norm_linear_q4gsw",
           "pte_webgpu.linear_q4gsw_offsets", "pte_webgpu.linear_q4gsw_residual")


def _floats(t):
    data = t.tobytes()
    return struct.unpack(f"<{len(data) // t.dtype.itemsize}{t.dtype.struct_code}", data)


def _max_error(got, want):
    a, b = _floats(got), _floats(want)
    if len(a) != len(b) or tuple(got.shape) != tuple(want.shape):
        return float("inf")
    return max((abs(x - y) for x, y in zip(a, b)), default=0.0)


def _argmaxes(t):
    """The argmax of each row (last axis) of a logits tensor."""
    values, width = _floats(t), t.shape[-1]
    return [max(range(width), key=lambda j, r=r: values[r * width + j])
            for r in range(len(values) // width)]


async def decoder_report(rt, pte, npz):
    arrays = npy.read_npz(npz, "reference")
    mode, calls = steps.plan_calls(arrays)
    wants = [[arrays[f"step{k}_out{j}"] for j in range(len(arrays))
              if f"step{k}_out{j}" in arrays] for k in range(len(calls))]
    try:
        program = await rt.load_program(pte)
    except pte_webgpu.UnsupportedError as e:
        return {"unsupported": str(e)}
    try:
        method = program.load_method("forward")
        report = {"mode": mode, "errors": [], "argmax": [], "want_argmax": [],
                  "state": method._state.labels(),
                  # kinds of the linears' kernels (a dynamic linear may have a twin)
                  "linear_variants": sorted({k[key].split("-")[0].rstrip("4")
                                             for k in method.kernels for key in ("variant", "twin")
                                             if k["op"] in LINEARS and key in k}),
                  "linear_variant_names": sorted({k["variant"] for k in method.kernels
                                                  if k["op"] in LINEARS and "variant" in k})}
        for inputs, want in zip(calls, wants):
            outs = await method.execute(inputs, as_numpy=False)
            report["errors"].append(max(_max_error(o, w) for o, w in zip(outs, want)))
            report["argmax"].append(_argmaxes(outs[0]))
            report["want_argmax"].append(_argmaxes(want[0]))
        method.reset()
        outs = await method.execute(calls[0], as_numpy=False)
        report["reset_error"] = max(_max_error(o, w) for o, w in zip(outs, wants[0]))
        if len(calls) > 1:
            method.reset()
            outs = await method.execute(calls[1], as_numpy=False)
            report["skip_step0_error"] = max(_max_error(o, w) for o, w in zip(outs, wants[1]))
        return report
    finally:
        program.close()
