"""Loading and running one crafted program; what it gave, and what it should have given."""

from __future__ import annotations

import time

import numpy as np
from pte_webgpu import formats
from pte_webgpu.errors import PteError
from pte_webgpu.reference import interpreter as reference

from . import crafts


def inputs_for(method, fixture: str) -> list:
    """The fixture's own inputs where the crafted plan still takes them, else seeded
    random ones of the plan's shapes and dtypes."""
    ref = np.load(crafts.fixture_path(fixture).with_suffix(".npz"))
    own = [ref[k] for k in sorted(ref.files) if k.startswith("in")]
    rng = np.random.default_rng(0)
    out = []
    for i, (shape, dtype) in enumerate(method.input_specs()):
        if i < len(own) and own[i].shape == shape and own[i].dtype.name == dtype:
            out.append(own[i])
        elif dtype.startswith("int"):
            out.append(rng.integers(0, 4, size=shape).astype(dtype))
        else:
            out.append(rng.standard_normal(shape).astype(dtype))
    return out


async def run(rt, case):
    """(outcome, message, outputs, inputs, seconds): outcome is "ok", the PteError
    subclass name, or "ESCAPE:<type>" for anything else."""
    made = case.build()
    saved = rt.options
    t0 = time.perf_counter()
    program, outs, ins = None, None, None
    try:
        rt.options = dict(saved, **made.options)  # RuntimeOptions checks them here
        program = await rt.load_program(made.pte, made.ptds)
        method = program.load_method()
        ins = inputs_for(method, case.fixture)
        outs = await method.execute(ins)
        outcome, message = "ok", ""
    except PteError as e:
        outcome, message = type(e).__name__, str(e)
    except Exception as e:  # noqa: BLE001 - an escape is what the probe looks for
        outcome, message = f"ESCAPE:{type(e).__name__}", repr(e)[:2000]
    finally:
        rt.options = saved
        if program is not None:
            program.close()
    return outcome, message, outs, ins, time.perf_counter() - t0, made


def expected_outputs(made, ins) -> list:
    program = formats.open_program(made.pte, made.ptds)
    return [t.numpy() for t in reference.run_program(program, ins)]


def matches(got: list, want: list) -> str:
    """"" when every output matches the reference (NaN where it has NaN), else why not."""
    if len(got) != len(want):
        return f"{len(got)} outputs, the reference has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, reference {w.shape}"
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        tol = 2e-3 if w.dtype == np.float16 else 1e-4
        if not np.allclose(g64, w64, rtol=tol, atol=tol, equal_nan=True):
            bad = np.argwhere(~np.isclose(g64, w64, rtol=tol, atol=tol, equal_nan=True))[0]
            return f"output {i} at {tuple(bad)}: {g64[tuple(bad)]} vs reference " \
                   f"{w64[tuple(bad)]}"
    return ""
