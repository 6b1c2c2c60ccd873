"""An untimed run cut into leading submits (GpuDevice.first_submits: the GPU starts on
the first dispatches while the host encodes the rest) computes what one submit does."""

from pathlib import Path

import numpy as np
import pytest
from pte_webgpu import Runtime
from pte_webgpu.runtime.method import gpu_work

from tests.support.gpu_thread import run_sync

FIXTURE = Path(__file__).parents[1] / "fixtures" / "vision" / "resnet18.npz"


async def _outputs(cuts):
    rt = await Runtime.create("native")
    try:
        program = await rt.load_program(FIXTURE.with_suffix(".pte").read_bytes())
        method = program.load_method("forward")
        device = gpu_work(method).device
        device.first_submits = cuts
        submits = []
        inner = device._submit
        device._submit = lambda encoder: (submits.append(1), inner(encoder))
        x = np.load(FIXTURE)["in0"]
        got = [await method.execute([x]) for _ in range(2)]
        return got, len(submits) // 2, len(gpu_work(method).recording.steps)
    finally:
        rt.close()


@pytest.mark.parametrize("cuts", [(1,), (1, 3, 7), (2, 10 ** 6)])
def test_leading_submits_give_the_same_outputs(cuts):
    (want, one, steps) = run_sync(_outputs(()))
    (got, many, _) = run_sync(_outputs(cuts))
    assert one == 1 and many == 1 + sum(c < steps for c in cuts)
    for a, b in zip(want, got):
        assert np.array_equal(a[0], b[0])
