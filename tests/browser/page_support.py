# Python run inside the page (sent by the tests through BrowserSession.run_python).
# Fetches a fixture from the static server, runs it on WebGPU, compares with torch.
import os
import struct

import pte_webgpu
from pte_webgpu.formats import npy
from pyodide.http import pyfetch

_runtime = None


async def runtime():
    global _runtime
    if _runtime is None:
        _runtime = await pte_webgpu.Runtime.create()
    return _runtime


async def fetch_bytes(url):
    response = await pyfetch(url)
    if not response.ok:
        raise FileNotFoundError(url)
    return await response.bytes()


def floats(t):
    data = t.tobytes()
    return struct.unpack(f"<{len(data) // t.dtype.itemsize}{t.dtype.struct_code}", data)


def _diff(x, y):
    """|x - y|; 0 where both are NaN or the same infinity, inf where only one is NaN."""
    if x != x or y != y:
        return 0.0 if (x != x) == (y != y) else float("inf")
    return 0.0 if x == y else abs(x - y)


def max_errors(got, want):
    a, b = floats(got), floats(want)
    assert len(a) == len(b), (len(a), len(b))
    abs_err = max((_diff(x, y) for x, y in zip(a, b)), default=0.0)
    rel_err = max((d if d in (0.0, float("inf")) else d / max(abs(y), 1e-6)
                   for d, y in ((_diff(x, y), y) for x, y in zip(a, b))), default=0.0)
    return abs_err, rel_err


def numbered(arrays, prefix):
    """arrays[prefix + "0"], [prefix + "1"], ... in index order (out10 after out9)."""
    keys = [k for k in arrays if k.startswith(prefix) and k[len(prefix):].isdigit()]
    return [arrays[k] for k in sorted(keys, key=lambda k: int(k[len(prefix):]))]


async def run_fixture(name, ptd_files=(), repeat=1):
    rt = await runtime()
    pte = await fetch_bytes(f"/fixtures/{name}.pte")
    data = [(p.split("/")[-1], await fetch_bytes(f"/fixtures/{p}")) for p in ptd_files]
    arrays = npy.read_npz(await fetch_bytes(f"/fixtures/{name}.npz"))
    inputs, wants = numbered(arrays, "in"), numbered(arrays, "out")
    program = await rt.load_program(pte, data)
    try:
        method = program.load_method("forward")
        for _ in range(repeat):
            outs = await method.execute(inputs)
        return {
            "shapes": [list(o.shape) for o in outs],
            "want_shapes": [list(w.shape) for w in wants],
            "errors": [max_errors(o, w) for o, w in zip(outs, wants)],
            "live_buffers_loaded": rt.device.live_buffer_count,
        }
    finally:
        program.close()


async def load_error(pte, data=()):
    """Load a program and method; return (error type, message, live buffers after)."""
    rt = await runtime()
    before = rt.device.live_buffer_count
    try:
        program = await rt.load_program(pte, data)
        program.load_method("forward")
    except pte_webgpu.PteError as e:
        return type(e).__name__, str(e), rt.device.live_buffer_count - before
    program.close()
    return None, "", rt.device.live_buffer_count - before


async def fixture_with_variant(family, variant, name, ptd_files):
    """run_fixture with op family ``family``'s kernel variant forced (PTE_WEBGPU_<FAMILY>)."""
    from pte_webgpu.ops.variants import families
    var = families()[family].env_var
    os.environ[var] = variant
    try:
        return await run_fixture(name, ptd_files)
    finally:
        del os.environ[var]


def adapter_supports(family, variant):
    """Why this adapter cannot run ``variant`` of ``family`` (None when it can)."""
    from pte_webgpu.ops.variants import families
    fam = families()[family]
    return fam.why_not(fam.check(variant), _runtime.device.info)


async def run_edge(name):
    """tests/fixtures/edge/<name>: its one output for input in0, as hex bytes."""
    rt = await runtime()
    program = await rt.load_program(await fetch_bytes(f"/fixtures/edge/{name}.pte"))
    try:
        arrays = npy.read_npz(await fetch_bytes(f"/fixtures/edge/{name}.npz"))
        y, = await program.load_method().execute([arrays["in0"]])
        return y.tobytes().hex()
    finally:
        program.close()
