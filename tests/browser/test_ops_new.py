"""The elementwise ops added as table lines (issue 14) in Pyodide on Chromium's WebGPU:
the exported programs against eager torch's outputs, and the same programs fed torch's
edge values (NaN, +-inf, +-0, ties) against float64 math with torch's semantics. As in
tests/native/test_ops_new.py: fp32 within 1e-6 relative, f16 within 1e-2; NaN, infinities
and signed zeros exactly."""

import json
from pathlib import Path

import numpy as np
import pytest

from tests.fixture_index import FIXTURES
from tests.native.test_ops_new import NEW_FIXTURES, NEW_UNARY, X, check, fixture_tolerance

pytestmark = pytest.mark.browser

SUPPORT = (Path(__file__).parent / "page_support.py").read_text() + '''

async def run_raw(name, inputs=None):
    """Outputs of fixture ``name`` as (dtype, shape, hex bytes); ``inputs``: (dtype, shape,
    hex) to use instead of the fixture's."""
    from pte_webgpu.model.tensor import Tensor
    from pte_webgpu.model import dtypes
    rt = await runtime()
    program = await rt.load_program(await fetch_bytes(f"/fixtures/{name}.pte"))
    try:
        if inputs is None:
            arrays = npy.read_npz(await fetch_bytes(f"/fixtures/{name}.npz"))
            inputs = [arrays[k] for k in sorted(arrays) if k.startswith("in")]
        else:
            inputs = [Tensor(bytes.fromhex(h), tuple(s), dtypes.BY_NAME[d]) for d, s, h in inputs]
        outs = await program.load_method("forward").execute(inputs)
        return [(o.dtype.name if hasattr(o.dtype, "name") else str(o.dtype), list(o.shape),
                 o.tobytes().hex()) for o in outs]
    finally:
        program.close()
'''


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    return browser_session


def _arrays(raw):
    return [np.frombuffer(bytes.fromhex(h), np.dtype(d)).reshape(s) for d, s, h in raw]


def _run(page, name, inputs=None):
    arg = "None" if inputs is None else repr([(a.dtype.name, list(a.shape), a.tobytes().hex())
                                               for a in inputs])
    return _arrays(page.run_python(f"await run_raw({name!r}, {arg})"))


@pytest.mark.parametrize("entry", NEW_FIXTURES, ids=lambda e: e["name"])
def test_exported_program_matches_eager_torch(page, entry):
    got = _run(page, entry["name"])
    ref = np.load(FIXTURES / f"{entry['name']}.npz")
    want = [ref[f"out{i}"] for i in range(len(got))]
    assert len(want) == len([k for k in ref.files if k.startswith("out")]) >= 2
    rtol, floor = fixture_tolerance(entry["name"])
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        check(g, w, rtol, floor)


def _ops_of(name):
    """The op of each output of a new_unary program, from its exported aten graph."""
    meta = json.loads((FIXTURES / f"{name}.json").read_text())
    return meta["exported_aten_ops"]


# the NEW_UNARY case of each exported op, in output order (leaky_relu: 0.01 then 0.2)
CASES = {"extra/new_unary0_4x32": ["sin", "cos", "log", "round", "floor", "ceil", "sign"],
         "extra/new_unary1_4x32": ["reciprocal", "hardswish", "silu", "leaky_relu",
                                   "leaky_relu_0.2"]}


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.parametrize("half", [False, True], ids=["fp32", "fp16"])
def test_programs_at_the_edges(page, name, half):
    ops = [op.split(".")[1] for op in _ops_of(name)]
    assert [c.split("_0")[0] for c in CASES[name]] == ops  # the cases match the outputs
    x = np.concatenate([X[:60], X[-68:]])  # edges, ties and a range to +-12000
    finite = np.abs(np.nan_to_num(x, posinf=0, neginf=0))
    # no subnormals: SwiftShader flushes them to zero (denormal semantics are another
    # issue's; lavapipe keeps them, tested natively)
    x = x[(finite == 0) | (finite >= 2.0 ** -126)].astype(np.float32)
    x = np.resize(x, (4, 32)).astype(np.float32)
    if half:
        name = name.replace("_4x32", "_fp16_4x32")
        with np.errstate(over="ignore"):
            x = x.astype(np.float16)  # past float16's range: +-inf, as torch's .half()
    got = _run(page, name, [x])
    for case, out in zip(CASES[name.replace("_fp16", "")], got):
        fn = NEW_UNARY[case][2]
        with np.errstate(over="ignore"):  # past float16's range: inf, as torch's
            want = np.array([fn(float(v)) for v in x.ravel()], np.float64).reshape(x.shape)
            want = want.astype(x.dtype)
        if half:
            check(out.astype(np.float16), want, 1e-2, 1e-3)
        else:
            check(out, want, 1e-6, 1e-30)
