"""Native (wgpu) test support: one Runtime per module, or one bare device per module (for
graphs built by hand, tests/support/graph.py's G), on the GPU thread."""

import pytest

from tests.support.gpu_thread import native_device, native_runtime

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")


@pytest.fixture(scope="module")
def runtime():
    yield from native_runtime()


@pytest.fixture(scope="module")
def device():
    yield from native_device()
