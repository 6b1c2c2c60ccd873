"""Quantized programs (tests/fixtures/quant) run step by step natively (wgpu) and match eager
torch of the same quantized model; those needing an op of PENDING_OPS
(tests/support/quant_fixtures.py) must fail at load naming it, and only so."""

import pytest
from pte_webgpu.ops.registry import supported_ops

from tests.support.decoder_check import decoder_report
from tests.support.gpu_thread import run_sync
from tests.support.quant_fixtures import NAMES, PENDING_OPS, QUANT, check_quant_report


@pytest.mark.parametrize("name", NAMES)
def test_quant_steps_match_torch(runtime, name):
    pte = (QUANT / f"{name}.pte").read_bytes()
    npz = (QUANT / f"{name}.npz").read_bytes()
    report = run_sync(decoder_report(runtime, pte, npz))
    check_quant_report(name, report)
    assert runtime.device.live_buffer_count == 0


def test_pending_ops_are_not_in_the_table():
    """An op that landed leaves PENDING_OPS, so its fixtures are checked against torch."""
    assert not PENDING_OPS & set(supported_ops()), sorted(PENDING_OPS & set(supported_ops()))
