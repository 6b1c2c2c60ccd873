"""The vision and audio programs (tests/fixtures/vision: MobileNetV2/V3, ResNet-18,
EfficientNet-B0, ViT, DeepLabV3, U-Net, Whisper's encoder, fp32 and force_fp16) run natively
(wgpu) and match eager torch; one whose ops are not all in the table must fail at load naming
them (an xfail: tests/support/vision_models.py)."""

import numpy as np
import pytest
import pte_webgpu

from tests.support.gpu_thread import run_fixture, run_sync
from tests.support.vision_models import (
    NAMES,
    VISION,
    check_error,
    expect_unsupported,
    missing_ops,
)


def _load_error(runtime, name):
    """The UnsupportedError message of loading the program and its method (None: loaded)."""

    async def go():
        try:
            program = await runtime.load_program((VISION / f"{name}.pte").read_bytes())
        except pte_webgpu.UnsupportedError as e:
            return str(e)
        try:
            program.load_method("forward")
        except pte_webgpu.UnsupportedError as e:
            return str(e)
        finally:
            program.close()
        return None
    return run_sync(go())


@pytest.mark.parametrize("name", NAMES)
def test_vision_program_matches_torch(runtime, name):
    if missing_ops(name):
        expect_unsupported(name, _load_error(runtime, name))
    outs, wants = run_fixture(runtime, f"vision/{name}")
    errors = [float(np.abs(o.astype(np.float64) - w).max()) for o, w in zip(outs, wants)]
    check_error(name, [list(o.shape) for o in outs], errors)
    assert runtime.device.live_buffer_count == 0
