"""The probe table (tests/probe/table.py) in Chromium: every case, crafted on the host,
loaded and run in the page on WebGPU (SwiftShader); each gives its typed error or the
CPU reference's outputs, and leaves no buffer behind."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pte_webgpu import formats

from tests.probe.runner import expected_outputs
from tests.probe.table import CASES, accepts

pytestmark = pytest.mark.browser

SUPPORT = (Path(__file__).parent / "page_support.py").read_text()

PAGE_RUN = """
import math
import pte_webgpu
from pte_webgpu.formats import npy

async def probe(index, options):
    rt = await runtime()
    pte = await fetch_bytes(f"/probe/{index}.pte")
    ptds = [(name, await fetch_bytes(f"/probe/{index}-{k}.ptd"))
            for k, name in enumerate(PTD_NAMES[index])]
    arrays = npy.read_npz(await fetch_bytes(f"/probe/{index}.npz"))
    saved = rt.options
    before = rt.device.live_buffer_count
    program, worst = None, None
    try:
        rt.options = dict(saved, **options)  # RuntimeOptions checks them here
        program = await rt.load_program(pte, ptds)
        method = program.load_method()
        ins = [arrays[k] for k in sorted(arrays) if k.startswith("in")]
        outs = await method.execute(ins)
        wants = [arrays[k] for k in sorted(arrays) if k.startswith("out")]
        worst = 0.0 if len(outs) == len(wants) else math.inf
        for o, w in zip(outs, wants):
            a, b = floats(o), floats(w)
            if len(a) != len(b):
                worst = math.inf
            for x, y in zip(a, b):
                if math.isnan(x) and math.isnan(y) or x == y:
                    continue
                worst = max(worst, abs(x - y) / max(1.0, abs(y)) if math.isfinite(x - y)
                            else math.inf)
        outcome, message = "ok", ""
    except pte_webgpu.PteError as e:
        outcome, message = type(e).__name__, str(e)
    except Exception as e:
        outcome, message = "ESCAPE:" + type(e).__name__, repr(e)[:500]
    finally:
        rt.options = saved
        if program is not None:
            program.close()
    return [outcome, message, worst, rt.device.live_buffer_count - before]
"""


def _inputs(made) -> list:
    """Seeded inputs of the crafted plan's input shapes and dtypes."""
    plan = formats.open_program(made.pte, made.ptds).plans[0]
    rng = np.random.default_rng(0)
    out = []
    for vid in plan.inputs:
        t = plan.values[vid]
        if t.dtype.name.startswith("int"):
            out.append(rng.integers(0, 4, size=t.sizes).astype(t.dtype.name))
        else:
            out.append(rng.standard_normal(t.sizes).astype(t.dtype.name))
    return out


@pytest.fixture(scope="module")
def probe_page(browser_session, web_server, tmp_path_factory):
    folder = tmp_path_factory.mktemp("probe")
    ptd_names = []
    for i, case in enumerate(CASES):
        made = case.build()
        (folder / f"{i}.pte").write_bytes(made.pte)
        ptd_names.append([name for name, _ in made.ptds])
        for k, (_, data) in enumerate(made.ptds):
            (folder / f"{i}-{k}.ptd").write_bytes(bytes(data))
        arrays = {}
        if "ok" in case.expect.split("|"):
            ins = _inputs(made)
            arrays = {f"in{j}": x for j, x in enumerate(ins)}
            if case.compare:
                arrays.update({f"out{j}": y for j, y in
                               enumerate(expected_outputs(made, ins))})
        np.savez(folder / f"{i}.npz", **arrays)
    web_server.mount("/probe/", folder)
    browser_session.run_python(SUPPORT + PAGE_RUN + f"\nPTD_NAMES = {json.dumps(ptd_names)}")
    return browser_session



@pytest.mark.parametrize("index", range(len(CASES)), ids=[c.name for c in CASES])
def test_probe_in_chromium(probe_page, index):
    case = CASES[index]
    options = dict(case.build().options)
    outcome, message, worst, leaked = probe_page.run_python(
        f"await probe({index}, {json.dumps(options)})")
    assert accepts(case.expect, outcome), (outcome, message)
    assert case.match in message, message
    assert leaked == 0, f"{leaked} buffers left behind"
    if outcome == "ok" and case.compare:
        assert worst is not None and worst < 2e-3, f"max error vs the CPU reference {worst}"


def test_runtime_close_closes_every_program_in_chromium(probe_page):
    """Runtime.close() reaches every program; their methods then raise ClosedError."""
    kinds = probe_page.run_python("""
rt2 = await pte_webgpu.Runtime.create()
pte = await fetch_bytes("/fixtures/add_2x3x4.pte")
arrays = npy.read_npz(await fetch_bytes("/fixtures/add_2x3x4.npz"))
ins = [arrays[k] for k in sorted(arrays) if k.startswith("in")]
methods = [(await rt2.load_program(pte)).load_method() for _ in range(3)]
await methods[0].execute(ins)
rt2.close()
kinds = []
for m in methods:
    try:
        await m.execute(ins)
        kinds.append("ran")
    except pte_webgpu.PteError as e:
        kinds.append(type(e).__name__)
try:
    await rt2.load_program(pte)
    kinds.append("loaded")
except pte_webgpu.PteError as e:
    kinds.append(type(e).__name__)
kinds
""")
    assert kinds == ["ClosedError"] * 4


def test_load_close_cycles_stay_flat_in_chromium(probe_page):
    """100 load/execute/close cycles in the page: no buffer left, the wasm heap and the
    JS heap stop growing after a warm-up."""
    sizes = probe_page.run_python("""
import pyodide_js
from js import performance
rt3 = await pte_webgpu.Runtime.create()
pte = await fetch_bytes("/fixtures/block_1x8x64.pte")
arrays = npy.read_npz(await fetch_bytes("/fixtures/block_1x8x64.npz"))
ins = [arrays[k] for k in sorted(arrays) if k.startswith("in")]
sizes = []
for i in range(120):
    if i in (20, 119):
        mem = getattr(performance, "memory", None)
        sizes.append([pyodide_js._module.HEAP8.length,
                      int(mem.usedJSHeapSize) if mem else 0, rt3.device.live_buffer_count])
    program = await rt3.load_program(pte)
    await program.load_method().execute(ins)
    program.close()
rt3.close()
sizes
""")
    print("wasm heap, JS heap, live buffers after 20 and 119 cycles:", sizes)
    (wasm0, js0, live0), (wasm1, js1, live1) = sizes
    assert live0 == live1 == 0
    assert wasm1 - wasm0 <= 16 << 20, sizes
    assert js1 - js0 <= 16 << 20, sizes
