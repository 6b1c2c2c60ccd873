"""The demo page's image programs (tests/fixtures/image_page) natively against eager torch,
on their seeded inputs and on the test picture preprocessed by the page's rule (the
.picture.npz the browser test compares the page with)."""

from pathlib import Path

import numpy as np
import pytest

from tests.support.gpu_thread import run_sync

HERE = Path(__file__).parent.parent / "fixtures" / "image_page"
NAMES = ["classifier_3x32x32", "classifier_1x24x40", "segmenter_3x32x32"]


@pytest.mark.parametrize("name", NAMES)
def test_matches_eager_torch(runtime, name):
    cases = [np.load(HERE / f"{name}.npz"), np.load(HERE / f"{name}.picture.npz")]

    async def go():
        program = await runtime.load_program((HERE / f"{name}.pte").read_bytes())
        try:
            method = program.load_method()
            return [(await method.execute([c["in0"]]))[0] for c in cases]
        finally:
            program.close()

    for got, case in zip(run_sync(go()), cases):
        np.testing.assert_allclose(np.asarray(got), case["out0"], rtol=1e-5, atol=1e-5)
    assert runtime.device.live_buffer_count == 0
