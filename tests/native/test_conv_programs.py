"""The exported convolution programs (tests/fixtures/conv) natively (wgpu) against eager
torch: the rule's kernels, and the direct form forced (the CPU adapters' and general
fallback's); delegated ops and the plan kernel aten::convolution.out (batch 2,
transposed 1-D) alike."""

import numpy as np
import pytest

from tests.support.conv_fixtures import NAMES, tolerance
from tests.support.gpu_thread import run_fixture


def check(name, outs, wants):
    tol = tolerance(name)
    for got, want in zip(outs, wants):
        got, want = np.asarray(got, np.float64), want.astype(np.float64)
        assert got.shape == want.shape
        scale = max(1.0, float(np.abs(want).max()))
        err = np.abs(got - want) / (np.abs(want) + scale)
        assert float(err.max()) <= tol, (name, float(err.max()))


@pytest.mark.parametrize("name", NAMES)
def test_program_matches_eager_torch(runtime, name):
    outs, wants = run_fixture(runtime, f"conv/{name}")
    check(name, outs, wants)
    assert runtime.device.live_buffer_count == 0


@pytest.mark.parametrize("name", [n for n in NAMES if "fp16" not in n][::3])
def test_program_with_the_direct_form_forced(runtime, name, monkeypatch):
    monkeypatch.setenv("PTE_WEBGPU_CONV", "direct")
    outs, wants = run_fixture(runtime, f"conv/{name}")
    check(name, outs, wants)
