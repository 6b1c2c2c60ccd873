"""Elementwise ops of the unary and binary tables (sin, cos, log, round, floor, ceil,
sign, reciprocal, hardswish, hardsigmoid, silu, leaky_relu, minimum, maximum), natively:
on hand-built graphs at torch's edges (NaN, +-inf, +-0, ties, tiny and huge values)
against float64 math with torch's float32 semantics, in f32 and f16 storage; and the
exported programs of tests/fixtures/extra (unary_table*, minmax*) against eager torch's
stored outputs."""

from __future__ import annotations


import numpy as np
import pytest
from pte_webgpu.model import dtypes
from pte_webgpu.runtime.storage import Storage

from tests.support.activations import activation_want
from tests.support.elementwise_cases import ELEMENTWISE_PROGRAMS, UNARY_CASES, X, check, fixture_tolerance
from tests.support.fixture_index import FIXTURES
from tests.support.graph import G, rand

F16 = dtypes.FLOAT16


@pytest.mark.parametrize("case", list(UNARY_CASES))
def test_unary_op_follows_torch_at_the_edges(device, case):
    name, extra, fn = UNARY_CASES[case]
    x = X
    g = G()
    (got,) = g.run(device, g.op(name, g.input(x), *extra(g), g.tensor(x.shape)))
    check(got, activation_want(fn, x), 1e-6, 1e-30)


def test_sin_cos_log_are_accurate_on_dense_grids(device):
    """Near multiples of pi/2, past 12868 (the other range reduction) up to 3e38, and near
    1: relative 1e-6 with a floor of 1e-9."""
    big = np.exp(np.linspace(9, 88, 20001)).astype(np.float32)
    trig = np.concatenate([np.linspace(-100, 100, 20001, dtype=np.float32),
                           np.float32(np.pi / 2) * np.arange(-8000, 8000, 7, dtype=np.float32),
                           big, -big, np.array([3.4e38, -3.4e38, 12867.9, 12868.0], np.float32)])
    pos = np.concatenate([np.linspace(0.5, 2, 20001, dtype=np.float32),
                          np.exp(np.linspace(-103, 88, 20001)).astype(np.float32)])
    g = G()
    ti, pi = g.input(trig), g.input(pos)
    outs = [g.op("aten.sin.default", ti, g.tensor(trig.shape)),
            g.op("aten.cos.default", ti, g.tensor(trig.shape)),
            g.op("aten.log.default", pi, g.tensor(pos.shape))]
    s, c, lg = g.run(device, *outs)
    t64, p64 = trig.astype(np.float64), pos.astype(np.float64)
    for got, want in ((s, np.sin(t64)), (c, np.cos(t64)), (lg, np.log(p64))):
        want = want.astype(np.float32).astype(np.float64)  # torch's float32 result
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


MINMAX = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 3.5], np.float32)


@pytest.mark.parametrize("name,take_first", [("aten.minimum.default", np.less_equal),
                                             ("aten.maximum.default", np.greater_equal)])
def test_minimum_maximum_broadcast_and_propagate_nan(device, name, take_first):
    a = np.concatenate([MINMAX.reshape(8, 1, 1), rand(8, 1, 1)], axis=1)  # [8, 2, 1]
    b = np.concatenate([MINMAX, rand(8)]).reshape(2, 8)  # [2, 8]
    g = G()
    out = g.op(name, g.input(a), g.input(b), g.tensor((8, 2, 8)))
    (got,) = g.run(device, out)
    x, y = np.broadcast_arrays(a, b)
    with np.errstate(invalid="ignore"):
        want = np.where(np.isnan(x) | np.isnan(y), np.nan, np.where(take_first(x, y), x, y))
    check(got, want.astype(np.float32), 0, 0)  # exact: a pick, never a computation


EDGES16 = np.array([-np.inf, -65504.0, -100.0, -6.0, -3.0, -2.5, -1.5, -1.0, -0.5, -1e-3,
                    -6e-8, -0.0, 0.0, 6e-8, 1e-3, 0.5, 1.5, 2.5, 3.0, 3.5, 11.0, 1000.0, 65504.0,
                    np.inf, np.nan], np.float16)


@pytest.mark.parametrize("case", list(UNARY_CASES))
def test_unary_op_in_float16_storage(device, case):
    if "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")
    name, extra, fn = UNARY_CASES[case]
    x = np.concatenate([EDGES16, (np.random.default_rng(3).standard_normal(100) * 4)
                        .astype(np.float16)])
    g = G(Storage(half=True))
    out = g.op(name, g.input(x, F16), *extra(g), g.tensor(x.shape, dtype=F16))
    (got,) = g.run(device, out)
    with np.errstate(over="ignore"):
        want = activation_want(fn, x.astype(np.float64)).astype(np.float16)
    check(got.astype(np.float16), want, 1e-2, 1e-3)


# --- the exported programs, against eager torch ------------------------------------------
@pytest.mark.parametrize("entry", ELEMENTWISE_PROGRAMS, ids=lambda e: e["name"])
def test_exported_program_matches_eager_torch(entry):
    import pte_webgpu

    from tests.support.gpu_thread import run_sync

    async def go():
        rt = await pte_webgpu.Runtime.create("native")
        try:
            program = await rt.load_program((FIXTURES / f"{entry['name']}.pte").read_bytes())
            ref = np.load(FIXTURES / f"{entry['name']}.npz")
            ins = [ref[k] for k in sorted(ref.files) if k.startswith("in")]
            outs = await program.load_method().execute(ins)
            program.close()
            return [np.asarray(o) for o in outs], [ref[f"out{i}"] for i in range(len(outs))]
        finally:
            rt.close()

    got, want = run_sync(go())
    assert len(got) == len(want) >= 2
    rtol, floor = fixture_tolerance(entry["name"])
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        check(g, w, rtol, floor)
