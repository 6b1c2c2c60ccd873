"""Native (wgpu) test support: one Runtime per module, on the GPU thread."""

import pytest

from tests.native.gpu_thread import native_runtime

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")


@pytest.fixture(scope="module")
def runtime():
    yield from native_runtime()
