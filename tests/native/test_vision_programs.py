"""The exported pooling, normalization, resampling and padding programs
(tests/fixtures/vision_ops) natively against eager torch (tests/support/vision_fixtures.py)."""

import pytest
from pte_webgpu.errors import UnsupportedError
from pte_webgpu.ops.registry import supported_ops

from tests.support.gpu_thread import run_fixture
from tests.support.vision_fixtures import NAMES, PENDING, check_outputs, ops_of


@pytest.mark.parametrize("name", NAMES)
def test_program_matches_torch(runtime, name):
    if name in PENDING:
        with pytest.raises(UnsupportedError, match=PENDING[name]):
            run_fixture(runtime, f"vision_ops/{name}")
        return
    assert ops_of(name) <= set(supported_ops()), ops_of(name) - set(supported_ops())
    got, _ = run_fixture(runtime, f"vision_ops/{name}")
    check_outputs(name, got)
    assert runtime.device.live_buffer_count == 0
