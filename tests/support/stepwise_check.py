"""Run one program of tests/fixtures/masks_kv call by call (steps share one loaded method)
and compare every output with eager torch's: NaN where torch has NaN, infinities and
zeros (with their sign) exact, other values within ``tol`` relative (and absolute near 0).
Pure Python on pte_webgpu's Tensor (no numpy): the same text runs inside the Pyodide page.

``await stepwise_report(rt, pte_bytes, npz_bytes)`` -> {"calls": n, "mismatches": [[count per
output] per call], "first": a description of the first mismatch or None}.
"""

import math
import struct

from pte_webgpu.app import steps
from pte_webgpu.formats import npy


def _values(t):
    data = t.tobytes()
    return struct.unpack(f"<{len(data) // t.dtype.itemsize}{t.dtype.struct_code}", data)


def _same(x, w, tol):
    if math.isnan(w) or math.isnan(x):
        return math.isnan(w) and math.isnan(x)
    if math.isinf(w) or w == 0:
        return x == w and math.copysign(1.0, x) == math.copysign(1.0, w)
    return abs(x - w) <= tol * max(1.0, abs(w))


async def stepwise_report(rt, pte, npz, tol=1e-5):
    arrays = npy.read_npz(npz, "reference")
    _mode, calls = steps.plan_calls(arrays)
    prefix = "step{k}_" if len(calls) > 1 or "step0_out0" in arrays else ""
    program = await rt.load_program(pte)
    report = {"calls": len(calls), "mismatches": [], "first": None}
    try:
        method = program.load_method("forward")
        for k, inputs in enumerate(calls):
            p = prefix.format(k=k)
            wants = [arrays[f"{p}out{j}"] for j in range(len(arrays)) if f"{p}out{j}" in arrays]
            outs = await method.execute(inputs, as_numpy=False)
            counts = []
            for j, (o, w) in enumerate(zip(outs, wants)):
                if tuple(o.shape) != tuple(w.shape):
                    counts.append(-1)
                    continue
                bad = [i for i, (x, y) in enumerate(zip(_values(o), _values(w)))
                       if not _same(x, y, tol)]
                if bad and report["first"] is None:
                    i = bad[0]
                    report["first"] = f"call {k} out{j}[{i}]: {_values(o)[i]} vs {_values(w)[i]}"
                counts.append(len(bad))
            if len(outs) != len(wants):
                counts.append(-2)
            report["mismatches"].append(counts)
        return report
    finally:
        program.close()
