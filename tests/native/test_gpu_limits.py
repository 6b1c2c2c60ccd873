"""A program whose tensor does not fit the device's buffer limits fails at load, before any
buffer is made, with a GpuLimitError naming the tensor, its size, the limit and the
adapter; the limits are the adapter's own (requested for the device)."""

import dataclasses

import pte_webgpu
import pytest
from pte_webgpu.formats import open_program
from pte_webgpu.model.graph import TensorValue

from tests.support.fixture_index import FIXTURES
from tests.support.gpu_thread import run_sync

PTE = FIXTURES / "decoders" / "llama_dynamic_rope_fp16.pte"  # float16 weights, widened on GPU


def _largest_constant(pte: bytes):
    """(bytes on the GPU as float32, graph value id, constant index) of the first of the
    largest constants (the one the load meets first)."""
    best = (0, -1, -1)
    for plan in open_program(pte).plans:
        for d in plan.delegates:
            g = d.graph.graph
            for vid, v in enumerate(g.values):
                if isinstance(v, TensorValue) and v.constant_id >= 0 and v.numel * 4 > best[0]:
                    best = (v.numel * 4, vid, g.constants[v.constant_id].index)
    return best


@pytest.fixture
def lowered(runtime):
    """Lower the device's limits for one test (as a smaller adapter would report them)."""
    info = runtime.device.info
    yield lambda **limits: setattr(runtime.device, "info", dataclasses.replace(
        info, limits={**info.limits, **limits}))
    runtime.device.info = info


def test_device_has_the_adapters_buffer_limits(runtime):
    import wgpu

    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    for name, kebab in (("maxBufferSize", "max-buffer-size"),
                        ("maxStorageBufferBindingSize", "max-storage-buffer-binding-size")):
        assert runtime.device.info.limits[name] == adapter.limits[kebab]
        assert runtime.device.device.limits[kebab] == adapter.limits[kebab]


@pytest.mark.parametrize("limit", ["maxStorageBufferBindingSize", "maxBufferSize"])
def test_a_tensor_beyond_a_limit_fails_at_load_naming_it(runtime, lowered, limit):
    pte = PTE.read_bytes()
    size, vid, index = _largest_constant(pte)
    assert size >= 1 << 14  # the embedding of the tiny llama
    lowered(**{limit: size - 4})
    before = runtime.device.live_buffer_count
    with pytest.raises(pte_webgpu.GpuLimitError) as e:
        run_sync(runtime.load_program(pte))
    text = str(e.value)
    assert f"graph value {vid} " in text and f"(constant {index}, " in text
    assert f"needs {pte_webgpu.errors.count(size)} bytes" in text
    assert f"{limit} is {pte_webgpu.errors.count(size - 4)} bytes" in text
    assert runtime.device.info.summary() in text
    assert runtime.device.live_buffer_count == before  # refused before any upload
    lowered(**{limit: size})  # exactly the tensor's size fits: the same program loads
    run_sync(runtime.load_program(pte)).close()
