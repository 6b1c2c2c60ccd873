"""Native WebGPU through wgpu-py (wgpu-native): the same runtime in CPython.

Optional: ``pip install pte-webgpu[native]``. Needs a Vulkan/Metal/D3D adapter
(lavapipe or SwiftShader work for tests).
"""

from __future__ import annotations

from ..errors import GpuError, GpuValidationError, ShaderCompileError, UnsupportedError
from .interface import (LIMIT_NAMES, WANTED_FEATURES, AdapterInfo, GpuDevice, Recording,
                        encode_steps)


def _kebab(name: str) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in name)


class NativeDevice(GpuDevice):
    @classmethod
    async def create(cls, power_preference: str = "high-performance") -> "NativeDevice":
        try:
            import wgpu
        except ImportError:
            raise UnsupportedError("the native backend needs wgpu: "
                                   "pip install 'pte-webgpu[native]'") from None
        adapter = wgpu.gpu.request_adapter_sync(power_preference=power_preference)
        if adapter is None:
            raise GpuError("no native WebGPU adapter found")
        have = set(adapter.features)
        # wgpu-native names the subgroup feature "subgroup".
        features = [f for f in WANTED_FEATURES if f in have]
        limits = {n: adapter.limits[_kebab(n)] for n in LIMIT_NAMES if _kebab(n) in adapter.limits}
        device = adapter.request_device_sync(
            required_features=features,
            required_limits={_kebab(k): v for k, v in limits.items()})
        info = adapter.info
        return cls(wgpu, device, AdapterInfo(
            "native", info.get("vendor", ""), info.get("architecture", ""),
            info.get("device", "") or info.get("description", ""),
            info.get("adapter_type", "") == "CPU", frozenset(features), limits))

    def __init__(self, wgpu, device, info: AdapterInfo):
        super().__init__(info)
        self.wgpu, self.device = wgpu, device
        usage = wgpu.BufferUsage
        self._usage = {"storage": usage.STORAGE, "uniform": usage.UNIFORM,
                       "copy_src": usage.COPY_SRC, "copy_dst": usage.COPY_DST,
                       "map_read": usage.MAP_READ}

    def _create_buffer(self, size, usage, label):
        flags = 0
        for u in usage:
            flags |= self._usage[u]
        return self.device.create_buffer(size=size, usage=flags, label=label)

    def _destroy_buffer(self, handle):
        handle.destroy()

    def write_buffer(self, buf, data, offset=0):
        self.device.queue.write_buffer(buf.handle, offset, data)

    async def create_pipeline(self, wgsl, entry, constants, label):
        try:
            module = self.device.create_shader_module(code=wgsl, label=label)
        except Exception as e:  # wgpu raises its own error types with the compiler text
            raise ShaderCompileError(f"WGSL of {label!r} failed to compile: {e}") from None
        try:
            return self.device.create_compute_pipeline(
                layout="auto", label=label,
                compute={"module": module, "entry_point": entry, "constants": constants})
        except Exception as e:
            raise GpuValidationError(f"pipeline {label!r}: {e}") from None

    def bind_group(self, pipeline, entries, label):
        try:
            return self.device.create_bind_group(
                layout=pipeline.get_bind_group_layout(0), label=label,
                entries=[{"binding": b, "resource": {"buffer": buf.handle, "offset": 0,
                                                     "size": size}}
                         for b, buf, size in entries])
        except Exception as e:
            raise GpuValidationError(f"bind group {label!r}: {e}") from None

    async def run(self, recording: Recording, reads, timestamps=None):
        encoder = self.device.create_command_encoder()

        def dispatch(compute, step):
            compute.set_pipeline(step.pipeline)
            compute.set_bind_group(0, step.bind_group)
            compute.dispatch_workgroups(*step.grid)

        encode_steps(recording.steps, encoder.begin_compute_pass, dispatch,
                     lambda c: encoder.copy_buffer_to_buffer(c.src.handle, 0, c.dst.handle, 0,
                                                             c.size))
        for src, staging, size in reads:
            encoder.copy_buffer_to_buffer(src.handle, 0, staging.handle, 0, size)
        self.device.queue.submit([encoder.finish()])
        out = []
        for _, staging, size in reads:
            staging.handle.map_sync(self.wgpu.MapMode.READ, 0, size)
            out.append(bytes(staging.handle.read_mapped(0, size)))
            staging.handle.unmap()
        return out

    async def push_error_scopes(self):
        pass  # wgpu-py raises validation errors as Python exceptions where they happen

    async def pop_error_scopes(self, what):
        pass
