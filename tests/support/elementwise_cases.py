"""The elementwise ops of the unary and binary tables at torch's edges, shared by the
native and browser tests: each unary op with its extra arguments and a float64 function
with torch's float32 semantics, the inputs X (edges, ties, ranges), the check (NaNs,
infinities and signed zeros exactly), and the exported programs of tests/fixtures/extra
(unary_table*, minmax*) with their tolerances."""

from __future__ import annotations

import math

import numpy as np

from tests.support.activations import EDGES
from tests.support.fixture_index import INDEX
from tests.support.graph import rand


def _log(x):
    return math.nan if x != x or x < 0 else (math.log(x) if x else -math.inf)


def _relu6_shift(x):
    return x if x != x else min(max(x + 3.0, 0.0), 6.0) / 6.0


def _integral(fn):
    return lambda x: math.copysign(float(fn(x)), x) if math.isfinite(x) else x


def _silu(x):
    e = math.inf if -x > 709 else math.exp(-x)
    return x / (1.0 + e)


SLOPE = float(np.float32(0.01))  # torch casts negative_slope to the tensor's float32

# name -> (op, extra args maker, float64 function with torch's float32 semantics)
UNARY_CASES = {
    "sin": ("aten.sin.default", lambda g: [], lambda x: math.sin(x) if math.isfinite(x) else math.nan),
    "cos": ("aten.cos.default", lambda g: [], lambda x: math.cos(x) if math.isfinite(x) else math.nan),
    "log": ("aten.log.default", lambda g: [], _log),
    "round": ("aten.round.default", lambda g: [], _integral(round)),  # half to even
    "floor": ("aten.floor.default", lambda g: [], _integral(math.floor)),
    "ceil": ("aten.ceil.default", lambda g: [], _integral(math.ceil)),
    "sign": ("aten.sign.default", lambda g: [],
             lambda x: 1.0 if x > 0 else -1.0 if x < 0 else 0.0),  # NaN and -0: 0, as torch
    "reciprocal": ("aten.reciprocal.default", lambda g: [],
                   lambda x: 1.0 / x if x else math.copysign(math.inf, x)),
    "hardswish": ("aten.hardswish.default", lambda g: [], lambda x: x * _relu6_shift(x)),
    "hardsigmoid": ("aten.hardsigmoid.default", lambda g: [], _relu6_shift),
    "silu": ("aten.silu.default", lambda g: [], _silu),
    "leaky_relu": ("aten.leaky_relu.default", lambda g: [g.null()],
                   lambda x: x * SLOPE if x < 0 else x),
    "leaky_relu_0.2": ("aten.leaky_relu.default", lambda g: [g.double(0.2)],
                       lambda x: x * float(np.float32(0.2)) if x < 0 else x),
}

TIES = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, 1e-45, -1e-45, 8388607.5, 8388609.0,
                 1.0000001, 0.99999994, 2.0 ** -126, 1e38, -1e38], np.float32)
X = np.concatenate([EDGES, TIES, rand(300, scale=4.0), rand(100, scale=300.0),
                    np.linspace(-12000, 12000, 301, dtype=np.float32)])


def check(got, want, rtol, floor):
    """NaNs, infinities and signed zeros exactly as torch; else within ``rtol`` relative,
    or ``floor`` absolute (where the result is near 0)."""
    got, want = got.astype(np.float64), want.astype(np.float64)
    assert np.array_equal(np.isnan(got), np.isnan(want)), np.flatnonzero(np.isnan(got) != np.isnan(want))
    special = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(got[special], want[special])
    np.testing.assert_array_equal(np.signbit(got[special]), np.signbit(want[special]))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok], want[ok], rtol=rtol, atol=floor)


# the exported programs (tests/fixtures/extra), against eager torch's outputs
ELEMENTWISE_PROGRAMS = [e for e in INDEX if e["name"].startswith(("extra/unary_table", "extra/minmax"))]


def fixture_tolerance(name):
    return (1e-2, 1e-3) if "fp16" in name else (1e-6, 1e-7)
