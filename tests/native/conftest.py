"""Native (wgpu) test support: one Runtime per module, on the GPU thread."""

import pytest

import pte_webgpu
from tests.native.gpu_thread import run_sync

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")


@pytest.fixture(scope="module")
def runtime():
    try:
        rt = run_sync(pte_webgpu.Runtime.create("native"))
    except pte_webgpu.GpuError as e:
        pytest.skip(f"no native adapter: {e}")
    yield rt
    rt.close()
