"""Run one 8-bit fixture (tests/fixtures/quant8, made by make_quant8.py) on every step of
its .npz and compare with eager torch of the same quantized model. Pure Python on
pte_webgpu's Tensor (no numpy), so the same text runs natively and in the Pyodide page.

``await quant8_report(rt, pte, npz, options)`` returns {"steps": [...], "kernels": [...]}:
per step the largest error and each element off by more than 1e-4 with ours, torch's
and, for programs whose output is quantized, the float64 value the output quantize
rounds (``stepK_tie0``); "kernels" the variants the linears ran. A program that does
not load gives {"load_error": the error's class name, "message": its text}.
"""

import struct

import pte_webgpu
from pte_webgpu.formats import npy


def _floats(t):
    data = t.tobytes()
    return struct.unpack(f"<{len(data) // t.dtype.itemsize}{t.dtype.struct_code}", data)


async def quant8_report(rt, pte, npz, tol=1e-4):
    arrays = npy.read_npz(npz, "reference")
    try:
        program = await rt.load_program(pte)
    except pte_webgpu.PteError as e:
        return {"load_error": type(e).__name__, "message": str(e)}
    try:
        method = program.load_method("forward")
        steps = []
        k = 0
        while f"step{k}_in0" in arrays:
            got = (await method.execute([arrays[f"step{k}_in0"]], as_numpy=False))[0]
            want = arrays[f"step{k}_out0"]
            a, b = _floats(got), _floats(want)
            tie = _floats(arrays[f"step{k}_tie0"]) if f"step{k}_tie0" in arrays else None
            same_shape = tuple(got.shape) == tuple(want.shape)
            bad = [[i, x, y, tie[i] if tie else None]
                   for i, (x, y) in enumerate(zip(a, b)) if not abs(x - y) <= tol]
            steps.append({"shape_ok": same_shape and len(a) == len(b), "bad": bad[:20],
                          "n_bad": len(bad),
                          "max_err": max((abs(x - y) for x, y in zip(a, b)), default=0.0)})
            k += 1
        kernels = [{"op": e["op"], "variant": e.get("variant"), "picked": e.get("picked")}
                   for e in method.kernels]
        return {"steps": steps, "kernels": kernels}
    finally:
        program.close()
