"""Native WebGPU through wgpu-py (wgpu-native): the same runtime in CPython.

Optional: ``pip install pte-webgpu[native]``. Needs a Vulkan/Metal/D3D adapter
(lavapipe or SwiftShader work for tests).
"""

from __future__ import annotations

import os
import tempfile
import time

from ..errors import GpuError, GpuValidationError, ShaderCompileError, UnsupportedError
from .adapter import PACKED_DOT, subgroup_sizes
from .interface import LIMIT_NAMES, WANTED_FEATURES, AdapterInfo, GpuDevice

_RAW: list = []
# How long a read polls the GPU without sleeping before it backs off (seconds)
SPIN_S = float(os.environ.get("PTE_WEBGPU_SPIN_MS", "5")) / 1e3


def _raw_calls():
    """(wgpu-native's C library, NULL) through wgpu-py's cffi binding, or None where this
    wgpu-py does not expose them (then the public API encodes) or PTE_WEBGPU_RAW_ENCODE=0."""
    if not _RAW:
        raw = None
        if os.environ.get("PTE_WEBGPU_RAW_ENCODE", "1") != "0":
            try:
                from wgpu.backends.wgpu_native._ffi import ffi, lib
                if all(hasattr(lib, f"wgpuComputePassEncoder{n}")
                       for n in ("SetPipeline", "SetBindGroup", "DispatchWorkgroups")):
                    raw = (lib, ffi.NULL)
            except ImportError:
                pass
        _RAW.append(raw)
    return _RAW[0]


def _kebab(name: str) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in name)


def _quiet_wsi() -> None:
    """The Vulkan loader's Wayland code prints "error: XDG_RUNTIME_DIR is invalid or not
    set" twice when that variable names no folder; compute needs no display, so give it
    a private one (mode 0700, ours) instead of letting the noise reach the user."""
    current = os.environ.get("XDG_RUNTIME_DIR")
    if current and os.path.isdir(current):
        return
    folder = os.path.join(tempfile.gettempdir(), f"pte-webgpu-runtime-{os.getuid()}")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        st = os.stat(folder)
        if st.st_uid == os.getuid() and st.st_mode & 0o077 == 0:
            os.environ["XDG_RUNTIME_DIR"] = folder
    except OSError:
        pass  # only noise is at stake


def _first_submits() -> tuple[int, ...]:
    text = os.environ.get("PTE_WEBGPU_FIRST_SUBMITS", "2,6,14,30")
    return tuple(int(t) for t in text.split(",") if t.strip())


class NativeDevice(GpuDevice):
    first_submits = _first_submits()

    @classmethod
    async def create(cls, power_preference: str = "high-performance") -> "NativeDevice":
        try:
            import wgpu
        except ImportError:
            raise UnsupportedError("the native backend needs wgpu: "
                                   "pip install 'pte-webgpu[native]'") from None
        _quiet_wsi()
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
        native = cls(wgpu, device, AdapterInfo(
            "native", info.get("vendor", ""), info.get("architecture", ""),
            info.get("device", "") or info.get("description", ""),
            info.get("adapter_type", "") == "CPU", frozenset(features), limits,
            # wgpu-py 0.32 spells these keys "stackgroup_*"
            subgroup_sizes(info.get("subgroup_min_size", info.get("stackgroup_min_size")),
                           info.get("subgroup_max_size", info.get("stackgroup_max_size"))),
            # naga (wgpu-native 25+) takes dot4I8Packed, polyfilled where the device lacks it
            frozenset({PACKED_DOT})))
        await native.warm_up()
        return native

    def __init__(self, wgpu, device, info: AdapterInfo):
        super().__init__(info)
        self.wgpu, self.device = wgpu, device
        if info.traits.is_cpu:  # its "GPU" is the host's own cores: nothing to overlap
            self.first_submits = ()
        usage = wgpu.BufferUsage
        self._usage = {"storage": usage.STORAGE, "uniform": usage.UNIFORM,
                       "copy_src": usage.COPY_SRC, "copy_dst": usage.COPY_DST,
                       "map_read": usage.MAP_READ, "query_resolve": usage.QUERY_RESOLVE}

    def _create_buffer(self, size, usage, label):
        flags = 0
        for u in usage:
            flags |= self._usage[u]
        return self.device.create_buffer(size=size, usage=flags, label=label)

    def _destroy_buffer(self, handle):
        handle.destroy()

    def flush(self):
        if self.closed:
            return
        try:
            self.device.queue.submit([])
        except Exception:  # noqa: BLE001 - a lost device has nothing left to flush
            pass

    def write_buffer(self, buf, data, offset=0):
        try:
            self.device.queue.write_buffer(buf.handle, offset, data)
        except Exception as e:  # a destroyed buffer, a write past its end
            raise GpuValidationError(f"writing {len(data)} bytes to {buf.label!r}: "
                                     f"{type(e).__name__}: {str(e)[:2000]}") from e

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

    # --- hooks of GpuDevice.run --------------------------------------------------------
    def _encoder(self):
        return self.device.create_command_encoder()

    def _begin_pass(self, encoder, query, index):
        if query is None:
            return encoder.begin_compute_pass()
        return encoder.begin_compute_pass(timestamp_writes={
            "query_set": query[0], "beginning_of_pass_write_index": 2 * index,
            "end_of_pass_write_index": 2 * index + 1})

    def _begin_pass_stamped(self, encoder, query, index):
        return encoder.begin_compute_pass(timestamp_writes={
            "query_set": query[0], "beginning_of_pass_write_index": index})

    def _stamp_in_pass(self, compute, query, index):
        compute._write_timestamp(query[0], index)  # wgpu-py's name for the native extension

    def _dispatch(self, compute, step):
        raw = _raw_calls()
        if raw is None:
            compute.set_pipeline(step.pipeline)
            compute.set_bind_group(0, step.bind_group)
            compute.dispatch_workgroups(*step.grid)
            return
        # wgpu-py's wrappers cost 2-3x the C calls per dispatch (a decode step encodes
        # ~550): call wgpu-native directly. The recording keeps pipeline and bind group
        # alive; a validation error still surfaces at encoder.finish().
        lib, null = raw
        handle = compute._internal
        lib.wgpuComputePassEncoderSetPipeline(handle, step.pipeline._internal)
        lib.wgpuComputePassEncoderSetBindGroup(handle, 0, step.bind_group._internal, 0, null)
        lib.wgpuComputePassEncoderDispatchWorkgroups(handle, *step.grid)

    def _copy(self, encoder, src, src_offset, dst, dst_offset, size):
        encoder.copy_buffer_to_buffer(src.handle, src_offset, dst.handle, dst_offset, size)

    def _submit(self, encoder):
        self.device.queue.submit([encoder.finish()])

    def _clear(self, encoder, buf):
        encoder.clear_buffer(buf.handle)

    async def _read(self, buf, size):
        if size == 0:
            return b""
        self._map(buf.handle, size)
        try:
            return bytes(buf.handle.read_mapped(0, size))
        finally:
            buf.handle.unmap()

    def _map(self, handle, size):
        """Map for reading once the GPU has written it. wgpu-py's map (and its poll
        thread) waits with wgpu-native's blocking poll, which waits for ALL submitted work
        and holds the device meanwhile: a chained decode step's read then also waits for
        the step submitted ahead of it, whose submit waits in turn. On GPUs this maps with
        the C calls and polls without blocking, so the map completes with the submission
        that wrote the buffer. CPU adapters share the host's cores with such polling:
        they block."""
        raw = _raw_calls()
        if raw is None or self.info.traits.is_cpu:
            handle.map_sync(self.wgpu.MapMode.READ, 0, size)
            return
        lib, null = raw
        from wgpu.backends.wgpu_native._ffi import ffi
        status = []

        @ffi.callback("void(WGPUMapAsyncStatus, WGPUStringView, void *, void *)")
        def mapped(code, _message, _u1, _u2):
            status.append(code)

        info = ffi.new("WGPUBufferMapCallbackInfo *")
        info.mode = lib.WGPUCallbackMode_AllowProcessEvents
        info.callback = mapped
        lib.wgpuBufferMapAsync(handle._internal, lib.WGPUMapMode_Read, 0, size, info[0])
        device, pause = self.device._internal, 1e-5
        # Spin first: a sleep costs ~60 us of timer slack, as much as a small model's
        # whole forward; past SPIN_S the wait is long enough for sleeps to be cheap.
        spin_until = time.perf_counter() + SPIN_S
        while not status:
            lib.wgpuDevicePoll(device, 0, null)
            if not status and time.perf_counter() > spin_until:
                time.sleep(pause)
                pause = min(2 * pause, 2e-4)
        if status[0] != lib.WGPUMapAsyncStatus_Success:
            raise GpuValidationError(f"mapping {handle.label!r} for reading failed "
                                     f"(status {status[0]})")
        # wgpu-py's own bookkeeping, which read_mapped and unmap check
        handle._map_state = self.wgpu.enums.BufferMapState.mapped
        handle._mapped_status = (0, size, self.wgpu.MapMode.READ)
        handle._mapped_memoryviews = []

    async def _wait_idle(self):
        # on_submitted_work_done_sync is broken in wgpu 0.32.0; a tiny read waits too.
        self.device.queue.read_buffer(self._fence(), 0, 4)

    def _fence(self):
        if getattr(self, "_fence_buffer", None) is None:
            self._fence_buffer = self.device.create_buffer(
                size=4, usage=self.wgpu.BufferUsage.COPY_SRC | self.wgpu.BufferUsage.COPY_DST)
        return self._fence_buffer

    def _create_query_set(self, count):
        return self.device.create_query_set(type="timestamp", count=count)

    def _resolve_queries(self, encoder, query_set, count, dst):
        encoder.resolve_query_set(query_set, 0, count, dst.handle, 0)

    async def push_error_scopes(self):
        pass  # wgpu-py raises validation errors as Python exceptions where they happen

    async def pop_error_scopes(self, what, raise_errors=True):
        pass
