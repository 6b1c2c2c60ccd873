"""The activations (unary family) at torch's edges: the edge values, each op with its
extra arguments and a float64 function with torch's float32 semantics, and the check
(NaNs, infinities and signed zeros exactly as torch)."""

from __future__ import annotations

import math

import numpy as np

EDGES = np.array([-np.inf, -1e30, -1e13, -100.0, -88.8, -20.0, -10.5, -9.0, -6.0, -5.0, -3.0,
                  -1.2, -1.0, -0.7, -0.625, -0.5, -1e-3, -1e-30, -0.0, 0.0, 1e-30, 1e-3, 0.3,
                  0.6, 0.625, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 9.0, 20.0, 88.0, 88.72, 89.0, 100.0,
                  1e13, 1e30, np.inf, np.nan], np.float32)


def _exp(x):
    return math.inf if x > 709 else math.exp(x)


def gelu_tanh(x):  # x/2 (1 + tanh(u)) without cancellation for x < 0
    return x / (1 + _exp(-2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x * x * x)))


# name -> (extra args maker, float64 function of one float): torch's float32 semantics
ACTIVATIONS = {
    "tanh": ("aten.tanh.default", lambda g: [], math.tanh),
    "gelu": ("aten.gelu.default", lambda g: [g.string("none")],
             lambda x: 0.5 * x * math.erfc(-x / math.sqrt(2))),
    "gelu_tanh": ("aten.gelu.default", lambda g: [g.string("tanh")], gelu_tanh),
    "relu": ("aten.relu.default", lambda g: [], lambda x: 0.0 if x < 0 else x),
    "exp": ("aten.exp.default", lambda g: [], _exp),
    "neg": ("aten.neg.default", lambda g: [], lambda x: -x),
    "abs": ("aten.abs.default", lambda g: [], abs),
    "sqrt": ("aten.sqrt.default", lambda g: [], lambda x: math.nan if x < 0 else math.sqrt(x)),
    "clamp": ("aten.clamp.default", lambda g: [g.double(-0.5), g.int(2)],
              lambda x: x if x != x else min(max(x, -0.5), 2.0)),
    "clamp_min": ("aten.clamp.default", lambda g: [g.double(0.0), g.null()],
                  lambda x: 0.0 if x < 0 else x),
    "clamp_max": ("aten.clamp.default", lambda g: [g.null(), g.double(1 / 3)],
                  lambda x: float(np.float32(1 / 3)) if x > 1 / 3 else x),
    "clamp_crossed": ("aten.clamp.default", lambda g: [g.int(2), g.int(1)],
                      lambda x: x if x != x else 1.0),
    "hardtanh": ("aten.hardtanh.default", lambda g: [g.double(-1.0), g.double(1.0)],
                 lambda x: x if x != x else min(max(x, -1.0), 1.0)),
}


def activation_want(fn, x):
    with np.errstate(over="ignore"):
        return np.array([fn(float(v)) for v in x], np.float64).astype(np.float32)


def check_activation(got, want, x, rtol):
    """Same NaNs, infinities and signed zeros as torch; else within ``rtol`` (or 1e-37)."""
    got, want = got.astype(np.float32), want.astype(np.float32)
    assert np.array_equal(np.isnan(got), np.isnan(want)), x[np.isnan(got) != np.isnan(want)]
    special = np.isinf(want) | (want == 0)
    np.testing.assert_array_equal(got[special], want[special])
    np.testing.assert_array_equal(np.signbit(got[special]), np.signbit(want[special]))
    ok = ~np.isnan(want)
    np.testing.assert_allclose(got[ok].astype(np.float64), want[ok].astype(np.float64),
                               rtol=rtol, atol=1e-37)
