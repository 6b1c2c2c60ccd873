"""WebGPU in the browser: ``navigator.gpu`` driven from Pyodide through ``pyodide.ffi``.

Conversions happen here and only here: Python dicts become JS objects once, at
load; the execute path touches only prebuilt JS handles.
"""

from __future__ import annotations

from ..errors import DeviceLostError, GpuError, GpuValidationError, ShaderCompileError
from .adapter import PACKED_DOT, subgroup_sizes
from .interface import LIMIT_NAMES, WANTED_FEATURES, AdapterInfo, GpuDevice
from .js_replay import ENCODE_JS, JsRecording
from .wasm_heap import wasm_heap


def _js():
    import js
    from pyodide.ffi import create_proxy, to_js

    return js, create_proxy, to_js


def _wgsl_features(gpu) -> frozenset:
    """navigator.gpu.wgslLanguageFeatures, those the kernels use (an older browser has none)."""
    have = getattr(gpu, "wgslLanguageFeatures", None)
    if _absent(have):
        return frozenset()
    return frozenset(f for f in (PACKED_DOT,) if have.has(f))


def _absent(value) -> bool:
    """JS null and undefined (Pyodide turns null into ``jsnull``, not None)."""
    return value is None or type(value).__name__ == "JsNull"


class BrowserDevice(GpuDevice):
    # Untimed runs encode a recording in one JS call (js_replay.py); False: op by op
    # from Python, as profiling does (the tests compare the two).
    js_replay = True

    @classmethod
    async def create(cls, power_preference: str = "high-performance") -> "BrowserDevice":
        js, create_proxy, to_js = _js()
        gpu = getattr(js.navigator, "gpu", None)
        if gpu is None:
            raise GpuError("this browser has no WebGPU (navigator.gpu is undefined); "
                           "headless Chromium needs --enable-unsafe-webgpu")
        obj = lambda d: to_js(d, dict_converter=js.Object.fromEntries)  # noqa: E731
        adapter = await gpu.requestAdapter(obj({"powerPreference": power_preference}))
        if _absent(adapter):
            raise GpuError("navigator.gpu.requestAdapter() returned no adapter")
        # Software adapters default storage limits low: ask for the adapter's own.
        limits = {n: int(getattr(adapter.limits, n)) for n in LIMIT_NAMES
                  if getattr(adapter.limits, n, None) is not None}
        features = [f for f in WANTED_FEATURES if adapter.features.has(f)]
        device = await adapter.requestDevice(obj({"requiredLimits": limits,
                                                  "requiredFeatures": features}))
        info = adapter.info
        adapter_info = AdapterInfo(
            "browser", str(info.vendor or ""), str(info.architecture or ""),
            str(info.description or info.device or ""),
            bool(getattr(info, "isFallbackAdapter", False) or
                 getattr(adapter, "isFallbackAdapter", False)),
            frozenset(features), limits,
            subgroup_sizes(getattr(info, "subgroupMinSize", None),
                           getattr(info, "subgroupMaxSize", None)),
            _wgsl_features(gpu))
        return cls(device, adapter_info)

    def __init__(self, device, info: AdapterInfo):
        super().__init__(info)
        js, create_proxy, to_js = _js()
        self.js, self.to_js = js, to_js
        # Looked up once: every attribute of a JS global costs a call on the execute path.
        self._map_read, self._u8, self._array_of = js.GPUMapMode.READ, js.Uint8Array, js.Array.of
        self.device, self.queue = device, device.queue
        self.heap = wasm_heap()  # bytes to and from JS (Pyodide's own calls fail past 2 GiB)
        self.lost_reason: str | None = None
        self.uncaptured: list[str] = []
        self._proxies = [create_proxy(self._on_lost), create_proxy(self._on_error)]
        device.lost.then(self._proxies[0])
        device.addEventListener("uncapturederror", self._proxies[1])
        usage = js.GPUBufferUsage
        self._usage = {"storage": usage.STORAGE, "uniform": usage.UNIFORM,
                       "copy_src": usage.COPY_SRC, "copy_dst": usage.COPY_DST,
                       "map_read": usage.MAP_READ, "query_resolve": usage.QUERY_RESOLVE}

    def _on_lost(self, info):
        self.lost_reason = f"{info.reason}: {info.message}"

    def _on_error(self, event):
        self.uncaptured.append(str(event.error.message))

    def _obj(self, d):
        return self.to_js(d, dict_converter=self.js.Object.fromEntries)

    def _create_buffer(self, size, usage, label):
        self._check_lost()
        flags = 0
        for u in usage:
            flags |= self._usage[u]
        return self.device.createBuffer(self._obj({"size": size, "usage": flags,
                                                   "label": label}))

    def _destroy_buffer(self, handle):
        handle.destroy()

    def flush(self):
        if self.lost_reason is None and not self.closed:
            self.queue.submit(self._array_of())

    # Measured in Chromium: to_js copies 4 MiB in ~3 ms, a view of the wasm heap costs
    # ~0.1 ms fixed; below this size the copy is cheaper.
    ZERO_COPY_BYTES = 256 * 1024

    def write_buffer(self, buf, data, offset=0):
        view = memoryview(data).cast("B")
        if len(view) < self.ZERO_COPY_BYTES:
            self.queue.writeBuffer(buf.handle, offset, self.bytes_to_js(view))
            return
        # Large writes go straight from the caller's buffer: a JS view of Python's memory.
        with self.heap.js_view(view) as data_js:
            self.queue.writeBuffer(buf.handle, offset, data_js)

    def bytes_to_js(self, view: memoryview):
        """A JS Uint8Array copy of ``view`` (right past 2 GiB of wasm heap: wasm_heap.py)."""
        return self.heap.to_js(view)

    # Widening float16 weights in JS keeps them out of the wasm heap: the f32 copy of a
    # slice lives in JS memory only until the queue has taken it.
    _WIDEN_JS = """(queue, buffer, offset, halves, n, step) => {
      if (halves.length !== n) throw new Error(`the wasm heap moved: ${halves.length} of ${n} bytes`);
      for (let at = 0; at < halves.length; at += step) {
        const part = halves.slice(at, Math.min(at + step, halves.length));  // 2-aligned
        queue.writeBuffer(buffer, offset + 2 * at, new Float32Array(new Float16Array(part.buffer)));
      }
    }"""
    WIDEN_STEP_BYTES = 8 << 20  # float16 bytes per queue write

    def write_f16_as_f32(self, buf, data, offset=0):
        if not hasattr(self, "_widen"):
            self._widen = (self.js.eval(self._WIDEN_JS)
                           if hasattr(self.js, "Float16Array") else None)
        if self._widen is None:
            return False
        view = memoryview(data).cast("B")
        if not len(view):
            return True
        # One JS call over a view of Python's memory: nothing in the loop allocates in
        # the wasm heap, so the view stays valid (heap growth would detach it).
        with self.heap.js_view(view) as halves:
            self._widen(self.queue, buf.handle, offset, halves, len(view), self.WIDEN_STEP_BYTES)
        return True

    async def create_pipeline(self, wgsl, entry, constants, label):
        self._check_lost()
        # Own scope: a bad module's validation error belongs to this ShaderCompileError,
        # not to whatever runs next.
        self.device.pushErrorScope("validation")
        module = self.device.createShaderModule(self._obj({"code": wgsl, "label": label}))
        await self.device.popErrorScope()
        info = await module.getCompilationInfo()
        errors = [f"line {m.lineNum}:{m.linePos}: {m.message}" for m in info.messages
                  if m.type == "error"]
        if errors:
            raise ShaderCompileError(f"WGSL of {label!r} failed to compile: " +
                                     "; ".join(errors))
        desc = {"label": label, "layout": "auto",
                "compute": {"module": module, "entryPoint": entry, "constants": constants}}
        try:
            return await self.device.createComputePipelineAsync(self._obj(desc))
        except Exception as e:  # a JsException carrying GPUPipelineError
            raise GpuValidationError(f"pipeline {label!r}: {e}") from None

    def bind_group(self, pipeline, entries, label):
        desc = {"label": label, "layout": pipeline.getBindGroupLayout(0),
                "entries": [{"binding": b, "resource": {"buffer": buf.handle, "offset": 0,
                                                        "size": size}}
                            for b, buf, size in entries]}
        return self.device.createBindGroup(self._obj(desc))

    async def push_error_scopes(self):
        self.device.pushErrorScope("out-of-memory")
        self.device.pushErrorScope("validation")

    async def pop_error_scopes(self, what, raise_errors=True):
        validation = await self.device.popErrorScope()
        memory = await self.device.popErrorScope()
        for err in (validation, memory):
            if raise_errors and not _absent(err):
                raise GpuValidationError(f"{what}: {err.message}")
        if raise_errors:
            self.check_alive()

    # --- hooks of GpuDevice.run --------------------------------------------------------
    def _check_lost(self):
        if self.lost_reason is not None:
            raise DeviceLostError(f"the WebGPU device was lost ({self.lost_reason}); "
                                  "create a new Runtime")

    def check_alive(self):
        """Before and after a run: device loss, then errors no scope caught."""
        self._check_lost()
        if self.uncaptured:
            errors, self.uncaptured = self.uncaptured, []
            raise GpuValidationError("WebGPU reported: " + "; ".join(errors))

    def _encoder(self):
        return self.device.createCommandEncoder()

    def _encode_recording(self, encoder, recording):
        if not self.js_replay or not recording.steps:
            super()._encode_recording(encoder, recording)
            return
        if not hasattr(self, "_encode_js"):
            self._encode_js = self.js.eval(ENCODE_JS)
        replay = recording.encoded
        if (not isinstance(replay, JsRecording) or replay.device is not self
                or not replay.follow(recording.steps)):
            replay = recording.encoded = JsRecording(self, recording.steps)
        replay.encode(encoder, self._encode_js)

    def _begin_pass(self, encoder, query, index):
        if query is None:
            return encoder.beginComputePass()
        return encoder.beginComputePass(self._obj({"timestampWrites": {
            "querySet": query[0], "beginningOfPassWriteIndex": 2 * index,
            "endOfPassWriteIndex": 2 * index + 1}}))

    def _begin_pass_stamped(self, encoder, query, index):
        return encoder.beginComputePass(self._obj({"timestampWrites": {
            "querySet": query[0], "beginningOfPassWriteIndex": index}}))

    def _stamp_in_pass(self, compute, query, index):
        compute.writeTimestamp(query[0], index)

    def _dispatch(self, compute, step):
        compute.setPipeline(step.pipeline)
        compute.setBindGroup(0, step.bind_group)
        compute.dispatchWorkgroups(*step.grid)

    def _copy(self, encoder, src, src_offset, dst, dst_offset, size):
        encoder.copyBufferToBuffer(src.handle, src_offset, dst.handle, dst_offset, size)

    def _submit(self, encoder):
        self.queue.submit(self._array_of(encoder.finish()))

    def _clear(self, encoder, buf):
        encoder.clearBuffer(buf.handle)

    async def _read(self, buf, size):
        if size == 0:
            return b""
        await buf.handle.mapAsync(self._map_read, 0, size)
        try:
            return self.heap.to_python(self._u8.new(buf.handle.getMappedRange(0, size)))
        finally:
            buf.handle.unmap()

    async def _wait_idle(self):
        await self.queue.onSubmittedWorkDone()

    def _create_query_set(self, count):
        return self.device.createQuerySet(self._obj({"type": "timestamp", "count": count}))

    def _resolve_queries(self, encoder, query_set, count, dst):
        encoder.resolveQuerySet(query_set, 0, count, dst.handle, 0)

    def close(self):
        super().close()
        # The two callback proxies stay alive: device.lost may still fire after this.
        self.device.destroy()
