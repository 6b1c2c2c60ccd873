"""The small GPU interface the runtime uses; backends: browser.py, native.py.

Only this folder touches WebGPU. Work is recorded once at load as a list of
steps (dispatches and buffer copies); ``run`` replays it with one command
encoder and one submit, then maps the output staging buffers.
"""

from __future__ import annotations

import contextlib
import struct
import threading
import time
from importlib import resources

from ..errors import ClosedError, GpuLimitError, GpuValidationError, PteError
from .adapter import LIMIT_NAMES, WANTED_FEATURES, AdapterInfo, AdapterTraits  # noqa: F401
from .recording import (
    BEGIN, DISPATCH, END, Buffer, Copy, Dispatch, Recording, align4, pass_plan,
)


def _split(data: bytes, offsets, outputs) -> list[memoryview]:
    """Each output's bytes of the staging copy, as views (no second copy)."""
    view = memoryview(data)
    return [view[o:o + size] for o, (_, size) in zip(offsets, outputs)]


@contextlib.contextmanager
def _wrapped(what: str):
    """Errors of the GPU API (wgpu's GPUValidationError, a JsException, ...) as
    GpuValidationError naming ``what`` was under way; the project's own pass through."""
    try:
        yield
    except PteError:
        raise
    except Exception as e:
        raise GpuValidationError(f"{what}: {type(e).__name__}: {str(e)[:2000]}") from e


def _stamp_count(steps) -> int:
    """Timestamps ``_encode_stamped`` writes: one as each pass begins, one per dispatch."""
    return sum(1 for op, _ in pass_plan(steps) if op in (BEGIN, DISPATCH))


def _spans(ns, pairs) -> list[float]:
    """Nanoseconds between each (start, end) pair of timestamps ``ns``; 0 for (None, None)."""
    return [float(max(0, ns[b] - ns[a])) if a is not None else 0.0 for a, b in pairs]


class GpuDevice:
    """Base class: bookkeeping shared by backends. Subclasses implement the _hooks."""

    info: AdapterInfo
    # Step indices where a waited run's encoding is cut into leading submits: encoding
    # and the submit cost the host a few microseconds a dispatch before the GPU sees any
    # work, so the first few dispatches go first and the GPU runs them meanwhile. None
    # here (the browser encodes a recording in one JS call); native sets its own.
    first_submits: tuple[int, ...] = ()

    def __init__(self, info: AdapterInfo):
        self.info = info
        self.live_buffers: set[int] = set()
        self._buffers: dict[int, Buffer] = {}
        # close() while another thread (or task) runs waits for the run to end: wgpu-native
        # aborts the process when a submit names a destroyed buffer.
        self._state = threading.Lock()
        self._running = 0
        self.closed = False
        self._close_pending = False

    # --- resources -------------------------------------------------------------------
    def create_buffer(self, size: int, usage: tuple[str, ...], label: str) -> Buffer:
        size = align4(size)
        limit = self.info.limits.get("maxBufferSize")
        if limit and size > limit:
            raise GpuLimitError(f"buffer {label!r} needs {size} bytes; the adapter's "
                                f"maxBufferSize is {limit}")
        try:
            handle = self._create_buffer(size, usage, label)
        except PteError:
            raise
        except Exception as e:  # out of memory, a lost device
            raise GpuValidationError(f"creating buffer {label!r} of {size} bytes: "
                                     f"{type(e).__name__}: {str(e)[:2000]}") from e
        buf = Buffer(handle, size, label)
        self._buffers[id(buf)] = buf
        return buf

    def destroy_buffer(self, buf: Buffer) -> None:
        if self._buffers.pop(id(buf), None) is not None:
            self._destroy_buffer(buf.handle)

    @property
    def live_buffer_count(self) -> int:
        return len(self._buffers)

    def limit(self, name: str, default: int) -> int:
        return int(self.info.limits.get(name) or default)

    # --- hooks for backends ------------------------------------------------------------
    def _create_buffer(self, size, usage, label):
        raise NotImplementedError

    def _destroy_buffer(self, handle):
        raise NotImplementedError

    def write_buffer(self, buf: Buffer, data, offset: int = 0) -> None:
        raise NotImplementedError

    def write_f16_as_f32(self, buf: Buffer, data, offset: int = 0) -> bool:
        """Write float16 bytes ``data`` widened to float32, without a copy of them in
        Python's memory, where the backend can (the browser: in JS); False when it
        cannot, and the caller converts (runtime/build.py, a slice at a time)."""
        return False

    async def create_pipeline(self, wgsl: str, entry: str, constants: dict, label: str):
        """Compile and build a compute pipeline; ShaderCompileError / GpuValidationError."""
        raise NotImplementedError

    def bind_group(self, pipeline, entries: list[tuple[int, Buffer, int]], label: str):
        """entries: (binding, buffer, byte size) for group 0 of ``pipeline``."""
        raise NotImplementedError

    # --- execution ---------------------------------------------------------------------
    async def run(self, recording: Recording, outputs: list[tuple[Buffer, int]],
                  staging: Buffer, profile: bool = False) -> tuple[list[bytes], list | None]:
        """Replay ``recording``, copy each output into ``staging`` (packed at 4-byte
        offsets), submit once, map ``staging`` once; returns each output's bytes (views
        of one copy). With ``profile``, also each dispatch's GPU time in microseconds
        (timestamp queries; wall time without them)."""
        with self.in_use(), _wrapped("running the recorded work"):
            self.check_alive()
            return await self._run(recording, outputs, staging, profile)

    def clear_buffers(self, bufs: list[Buffer]) -> None:
        """Zero whole buffers on the GPU in one submit, ordered after the queue's earlier
        writes and runs and before later ones: no zeros travel from the host."""
        if not bufs:
            return
        with self.in_use(), _wrapped("clearing buffers"):
            self.check_alive()
            encoder = self._encoder()
            for buf in bufs:
                self._clear(encoder, buf)
            self._submit(encoder)

    async def warm_up(self) -> None:
        """Run one tiny dispatch, copy and read back through ``run``: the first run in a
        process pays one-time costs (natively, cffi parses each C struct type wgpu-py
        builds on first use: ~0.2-0.6 s), which belong to device creation, not to a
        program's first execute. Its shader is warm_up.wgsl (x[0] = 1u)."""
        wgsl = resources.files(__package__).joinpath("warm_up.wgsl").read_text("utf-8")
        pipeline = await self.create_pipeline(wgsl, "main", {}, "warm-up")
        buf = self.create_buffer(4, ("storage", "copy_src"), "warm-up")
        staging = self.create_buffer(4, ("map_read", "copy_dst"), "warm-up read")
        try:
            group = self.bind_group(pipeline, [(0, buf, 4)], "warm-up")
            await self.run(Recording([Dispatch(pipeline, group, (1, 1, 1), "warm-up")]),
                           [(buf, 4)], staging)
        finally:
            self.destroy_buffer(buf)
            self.destroy_buffer(staging)

    def submit(self, recording: Recording, outputs: list[tuple[Buffer, int]],
               staging: Buffer) -> list[int]:
        """``run`` without waiting: replay, copy the outputs into ``staging``, submit; the
        offsets for ``read_outputs``, which may come after later submits (the GPU works on
        while the host prepares the next run)."""
        with self.in_use(), _wrapped("submitting the recorded work"):
            self.check_alive()
            return self._submit_run(recording, outputs, staging)[0]

    async def read_outputs(self, staging: Buffer, offsets: list[int],
                           outputs: list[tuple[Buffer, int]]) -> list[memoryview]:
        """The outputs a ``submit`` copied into ``staging``, once the GPU has written them."""
        with self.in_use(), _wrapped("reading back outputs"):
            data = await self._read(staging, offsets[-1] if offsets else 0)
            self.check_alive()
            return _split(data, offsets, outputs)

    @contextlib.contextmanager
    def in_use(self):
        """Hold the device open for a span of work (uploads, then a run): close() from
        another thread waits for the span to end instead of destroying its buffers."""
        with self._state:
            if self.closed:
                raise ClosedError("the GPU device is closed (Runtime.close()); create a new "
                                  "Runtime")
            self._running += 1
        try:
            yield self
        finally:
            with self._state:
                self._running -= 1
                close_now = self._close_pending and not self._running
                self._close_pending = self._close_pending and not close_now
            if close_now:
                self._release_all()

    async def _run(self, recording, outputs, staging, profile):
        if profile and "timestamp-query" not in self.info.features:
            return await self._run_timed_by_wall(recording, outputs, staging)
        steps = recording.steps
        dispatches = sum(isinstance(s, Dispatch) for s in steps) if profile else 0
        # timestamps inside passes: the step's own passes and barriers, timed (not the
        # per-pass floor of a timed pass for each dispatch)
        stamped = bool(dispatches) and self.info.traits.timestamps_in_pass
        count = _stamp_count(steps) if stamped else 2 * dispatches
        query = self._query_set(count) if dispatches else None
        try:
            offsets, pairs = self._submit_run(recording, outputs, staging, query, lead=True,
                                              stamped=stamped)
            data = await self._read(staging, offsets[-1] if offsets else 0)
            times = None
            if query is not None:
                ns = struct.unpack(f"<{count}Q", await self._read(query[1], 8 * count))
                times = [t / 1e3 for t in _spans(ns, pairs)]
        finally:
            if query is not None:
                self._release_query(query)
        self.check_alive()
        return _split(data, offsets, outputs), times

    def _submit_run(self, recording, outputs, staging, query=None, lead=False,
                    stamped=False) -> tuple[list[int], list | None]:
        """Encode ``recording`` (timed with ``query``: a timed pass per dispatch, or with
        ``stamped`` timestamps inside the passes), copy the outputs into ``staging``,
        submit; the outputs' offsets there and, timed, each dispatch's pair of timestamp
        indices (``_encode_timed``). ``lead``: a run the caller waits
        for, cut into ``first_submits``; a run submitted without waiting (chained decode
        steps) overlaps the host's next encoding already, and more submits would only
        cost the host time."""
        steps = recording.steps
        cuts = [c for c in self.first_submits if c < len(steps)] if lead and query is None \
            else []
        for start, stop in zip([0] + cuts, cuts):
            # the GPU starts on these while the host encodes the rest (first_submits)
            encoder = self._encoder()
            self._encode(encoder, steps[start:stop])
            self._submit(encoder)
        encoder = self._encoder()
        pairs = None
        if cuts:
            self._encode(encoder, steps[cuts[-1]:])
        elif query is None:
            self._encode_recording(encoder, recording)
        else:
            pairs = (self._encode_stamped if stamped else self._encode_timed)(
                encoder, recording.steps, query)
        offsets = self._copy_outputs(encoder, outputs, staging)
        if query is not None:
            self._resolve(encoder, query)
        self._submit(encoder)
        return offsets, pairs

    def _encode_recording(self, encoder, recording: Recording) -> None:
        """Encode a whole recording (untimed); a backend may replace the op-by-op
        ``_encode`` (the browser encodes in one JS call)."""
        self._encode(encoder, recording.steps)

    def _encode(self, encoder, steps) -> None:
        """Encode ``steps`` op by op as ``pass_plan`` says."""
        compute = None
        for op, index in pass_plan(steps):
            if op == DISPATCH:
                self._dispatch(compute, steps[index])
            elif op == BEGIN:
                compute = self._begin_pass(encoder, None, 0)
            elif op == END:
                self._end_pass(compute)
            else:
                step = steps[index]
                self._copy(encoder, step.src, 0, step.dst, 0, step.size)

    def _encode_timed(self, encoder, steps, query) -> list:
        """Profiling: each dispatch its own timed pass, an empty one too (every timestamp
        is written); for each dispatch its (start, end) timestamp indices."""
        index = 0
        for step in steps:
            if type(step) is Copy:
                self._copy(encoder, step.src, 0, step.dst, 0, step.size)
                continue
            compute = self._begin_pass(encoder, query, index)
            if step.grid[0] and step.grid[1] and step.grid[2]:
                self._dispatch(compute, step)
            self._end_pass(compute)
            index += 1
        return [(2 * i, 2 * i + 1) for i in range(index)]

    def _encode_stamped(self, encoder, steps, query) -> list:
        """Profiling with timestamps inside passes: ``steps`` encoded as ``pass_plan`` says,
        a timestamp as each pass begins and after each dispatch (``_stamp_count`` of them);
        for each dispatch its (start, end) indices, (None, None) for one left out."""
        pairs = {}
        compute, at = None, 0
        for op, index in pass_plan(steps):
            if op == BEGIN:
                compute = self._begin_pass_stamped(encoder, query, at)
            elif op == DISPATCH:
                self._dispatch(compute, steps[index])
                self._stamp_in_pass(compute, query, at + 1)
                pairs[index] = (at, at + 1)
                at += 1
            elif op == END:
                self._end_pass(compute)
                at += 1
            else:
                step = steps[index]
                self._copy(encoder, step.src, 0, step.dst, 0, step.size)
        return [pairs.get(i, (None, None)) for i, s in enumerate(steps) if type(s) is not Copy]

    def _copy_outputs(self, encoder, outputs, staging) -> list[int]:
        offsets, at = [], 0
        for buf, size in outputs:
            offsets.append(at)
            self._copy(encoder, buf, 0, staging, at, align4(size))
            at += align4(size)
        offsets.append(at)
        return offsets

    async def _run_timed_by_wall(self, recording, outputs, staging):
        """No timestamp queries: submit dispatch by dispatch and time each round trip."""
        times = []
        for step in recording.steps:
            encoder = self._encoder()
            self._encode(encoder, [step])
            self._submit(encoder)
            start = time.perf_counter()
            await self._wait_idle()
            if isinstance(step, Dispatch):
                times.append((time.perf_counter() - start) * 1e6)
        encoder = self._encoder()
        offsets = self._copy_outputs(encoder, outputs, staging)
        self._submit(encoder)
        data = await self._read(staging, offsets[-1])
        return _split(data, offsets, outputs), times

    # --- timing work outside ``run``, for bench/ ---------------------------------------
    async def time_passes(self, steps) -> float:
        """Seconds for the dispatches ``steps``, one compute pass each, all in one submit,
        until the queue is done (bench/gpu_bench.py)."""
        encoder = self._encoder()
        t0 = time.perf_counter()
        for step in steps:
            compute = self._begin_pass(encoder, None, 0)
            self._dispatch(compute, step)
            self._end_pass(compute)
        self._submit(encoder)
        await self._wait_idle()
        return time.perf_counter() - t0

    async def time_one_pass(self, steps) -> float:
        """GPU nanoseconds of the dispatches ``steps`` back to back in ONE compute pass,
        from the pass's two timestamps (needs ``info.traits.timestamps``)."""
        query = self._query_set(2)
        try:
            encoder = self._encoder()
            compute = self._begin_pass(encoder, query, 0)
            for step in steps:
                self._dispatch(compute, step)
            self._end_pass(compute)
            self._resolve(encoder, query)
            self._submit(encoder)
            start, end = struct.unpack("<2Q", await self._read(query[1], 16))
        finally:
            self._release_query(query)
        return float(max(0, end - start))

    async def time_each_in_pass(self, steps) -> list[float]:
        """GPU nanoseconds of each dispatch of ``steps`` back to back in ONE compute pass, as
        a chained step runs them (the barrier before a dispatch counted with it): a
        timestamp at the pass's start and after every dispatch (``_encode_stamped``; needs
        ``info.traits.timestamps_in_pass``). ``steps``: dispatches with non-empty grids."""
        count = _stamp_count(steps)
        query = self._query_set(count)
        try:
            encoder = self._encoder()
            pairs = self._encode_stamped(encoder, steps, query)
            self._resolve(encoder, query)
            self._submit(encoder)
            ns = struct.unpack(f"<{count}Q", await self._read(query[1], 8 * count))
        finally:
            self._release_query(query)
        return _spans(ns, pairs)

    def encode_only(self, recording: Recording) -> None:
        """Encode ``recording`` as ``run`` does and finish the command buffer, submitting
        nothing: the host cost of encoding (bench/encode_browser.py)."""
        encoder = self._encoder()
        self._encode_recording(encoder, recording)
        encoder.finish()

    # --- hooks for backends ------------------------------------------------------------
    def check_alive(self) -> None:
        pass

    def _encoder(self):
        raise NotImplementedError

    def _begin_pass(self, encoder, query, index: int):
        raise NotImplementedError

    def _dispatch(self, compute, step: Dispatch) -> None:
        raise NotImplementedError

    def _begin_pass_stamped(self, encoder, query, index: int):
        """A compute pass that writes timestamp ``index`` of ``query`` as it begins."""
        raise NotImplementedError

    def _stamp_in_pass(self, compute, query, index: int) -> None:
        raise NotImplementedError

    def _end_pass(self, compute) -> None:
        compute.end()

    def _copy(self, encoder, src: Buffer, src_offset: int, dst: Buffer, dst_offset: int,
              size: int) -> None:
        raise NotImplementedError

    def _submit(self, encoder) -> None:
        raise NotImplementedError

    def _clear(self, encoder, buf: Buffer) -> None:
        raise NotImplementedError

    async def _read(self, buf: Buffer, size: int) -> bytes:
        """Map a MAP_READ buffer, copy ``size`` bytes out, unmap."""
        raise NotImplementedError

    async def _wait_idle(self) -> None:
        raise NotImplementedError

    def _query_set(self, count: int):
        """(query set, readback Buffer, resolve Buffer, count) for ``count`` timestamps."""
        qs = self._create_query_set(count)
        resolve = self.create_buffer(8 * count, ("query_resolve", "copy_src"), "timestamps")
        readback = self.create_buffer(8 * count, ("map_read", "copy_dst"), "timestamps read")
        return qs, readback, resolve, count

    def _resolve(self, encoder, query) -> None:
        qs, readback, resolve, count = query
        self._resolve_queries(encoder, qs, count, resolve)
        self._copy(encoder, resolve, 0, readback, 0, 8 * count)

    def _release_query(self, query) -> None:
        qs, readback, resolve, _ = query
        qs.destroy()
        self.destroy_buffer(readback)
        self.destroy_buffer(resolve)

    def _create_query_set(self, count: int):
        raise NotImplementedError

    def _resolve_queries(self, encoder, query_set, count: int, dst: Buffer) -> None:
        raise NotImplementedError

    async def push_error_scopes(self) -> None:
        raise NotImplementedError

    async def pop_error_scopes(self, what: str, raise_errors: bool = True) -> None:
        """Raise GpuValidationError if anything since push_error_scopes failed
        (unless ``raise_errors`` is False: the scopes are only closed)."""
        raise NotImplementedError

    def flush(self) -> None:
        """Submit queued writes (an empty submit): wgpu keeps the staging memory of
        ``write_buffer`` calls, even to buffers since destroyed, until the next submit."""

    def close(self) -> None:
        """Destroy every buffer now, or when the runs in flight end."""
        with self._state:
            self.closed = True
            if self._running:
                self._close_pending = True
                return
        self._release_all()

    def _release_all(self) -> None:
        for buf in list(self._buffers.values()):
            self.destroy_buffer(buf)
