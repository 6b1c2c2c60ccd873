"""A loaded method: the plan's instruction chain built into GPU work once.

Load walks the chain: each Vulkan DelegateCall is built from its graph, each
non-delegated KernelCall runs the same op library on the plan's own values,
MoveCall becomes a buffer copy, FreeCall needs nothing, and a JumpFalseCall on
a constant condition is resolved. Every tensor stays on the GPU between them.
Execute writes the inputs, replays the recording with one submit and maps one
staging buffer that holds all outputs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from math import prod

from ..errors import ClosedError, InputError, UnsupportedError
from ..gpu.recording import Copy, Recording
from ..model.graph import Scalar
from ..model.method_meta import MethodMeta, method_meta
from ..model.plan_graph import delegate_of, kernel_op, linear_chain, plan_as_graph
from ..model.program_file import DelegateCall, ExecutionPlan, KernelCall, MoveCall, PlanTensor
from ..model.tensor import numpy_available, output
from ..ops import registry
from . import dynamic
from .build import BuildContext, Resources, build_delegate, call_handler, upload, upload_constant
from .exclusive import Exclusive
from .id_checks import IdChecks
from . import readout
from .inputs import bind
from .readout import Sample
from .state import State, mutable_plan_values

# int64 is held as int32, bool as u32 (storage.py)
PLAN_DTYPES = ("float32", "float16", "int32", "int64", "bool", "int8", "uint8")
SCALAR_OUTPUTS = ("int", "bool", "double")  # a constant method's outputs (get_max_seq_len)


def _row_major(sizes, dim_order) -> bool:
    """Whether a dim order lays the elements out as row-major does: the dims larger than
    1 appear in increasing order (size-1 dims may sit anywhere)."""
    if not dim_order:
        return True
    moving = [d for d in dim_order if 0 <= d < len(sizes) and sizes[d] != 1]
    return moving == sorted(moving) and sorted(dim_order) == list(range(len(sizes)))


class Method:
    """One method of a loaded program (``Program.load_method``), as ExecuTorch's Python
    ``Method``: ``execute``, ``metadata``, ``reset``, ``close``; ``name``, ``kernels`` (how
    each op runs), ``notes`` (storage choices), ``load_seconds``, ``last_profile``,
    ``closed``. Everything else (plan, buffers, recording, state) is the runtime's own;
    tools read the recorded work through ``gpu_work(method)``."""

    def __init__(self, plan: ExecutionPlan, device, storage, options, budget=None):
        self._plan, self._device = plan, device
        self._options = options  # RuntimeOptions of the Runtime that loads it
        self._storage = storage  # how float16 is held (runtime/storage.py), one rule per program
        self.name = plan.name
        self._graph = plan_as_graph(plan)
        self._resources = Resources(device, budget)  # budget: the program's, charged per buffer
        self._recording = Recording()
        self._plan_buffers: dict = {}
        self._outputs: list = []
        self._staging = None
        self.kernels: list[dict] = []  # one entry per op: where it runs, how, dispatches
        self._id_checks = IdChecks()  # ids outside a table: InputError (id_checks.py)
        self.notes: list[str] = []
        self.load_seconds = 0.0
        self.last_profile: list[dict] | None = None
        self._lock = Exclusive()  # safe across threads and event loops
        self.closed = False
        self._dyn = dynamic.DynamicEnv()  # SymInts and actual sizes, per execute
        self._state = State(device)  # what persists across executes; reset() restores it
        self._mutable = mutable_plan_values(plan)
        self._delegates_built = 0
        # execute(argmax=True): the argmax pass, made on first use, and the picks not read yet
        self._picker = readout.Picker(self.name, device, self._resources, self._recording,
                                      self._id_checks)
        self._dyn.plan_inputs = set(plan.inputs)

    # --- load ----------------------------------------------------------------------
    async def _build(self, file, pipelines: dict) -> None:
        start = time.perf_counter()
        plan = self._plan
        for vid in plan.inputs:
            if self._plan_tensor(vid, "input").shape_dynamism:
                self._dyn.dynamic.add(("shape", -1, vid))
        for vid in plan.outputs:
            if not self._scalar_output(vid):
                self._plan_tensor(vid, "output")
        await self._device.push_error_scopes()
        built = False
        try:
            for index, ins in linear_chain(plan):
                if isinstance(ins, DelegateCall):
                    await self._build_delegate(index, ins, file, pipelines)
                elif isinstance(ins, KernelCall):
                    await self._build_kernel(index, ins, file, pipelines)
                elif isinstance(ins, MoveCall):
                    self._build_move(index, ins, file)
            for vid in plan.inputs:  # also inputs no instruction reads: execute writes them
                self._buffer(vid, file)
            for vid in plan.outputs:
                if self._scalar_output(vid):
                    continue
                size = self._storage.nbytes(self._graph.values[vid])
                self._outputs.append((self._buffer(vid, file), size))
            self._outputs += self._id_checks.readbacks()  # read back after the outputs
            total = sum(size for _, size in self._outputs)
            if self._outputs:
                self._staging = self._resources.buffer(total, f"{plan.name} outputs staging",
                                                     ("map_read", "copy_dst"))
            built = True
        finally:
            # On failure the scopes are still popped, but the first error is the one raised.
            await self._device.pop_error_scopes(f"loading method {plan.name!r}",
                                               raise_errors=built)
        graphs = [self._graph] + [d.graph.graph for d in plan.delegates if d.graph]
        self.notes = self._storage.notes([v for g in graphs for v in g.values])
        self.load_seconds = time.perf_counter() - start

    def _scalar_output(self, vid: int) -> bool:
        """An Int/Bool/Double output: a constant method's value, returned as is."""
        value = self._plan.values[vid]
        return isinstance(value, Scalar) and value.kind in SCALAR_OUTPUTS

    def _plan_tensor(self, vid: int, role: str) -> PlanTensor:
        value = self._plan.values[vid]
        if not isinstance(value, PlanTensor):
            raise UnsupportedError(f"plan {self._plan.name!r} {role} value {vid} is a "
                                   f"{value.kind}; only tensor inputs/outputs are supported")
        if value.dtype is None or value.dtype.name not in PLAN_DTYPES:
            name = value.dtype.name if value.dtype else f"ScalarType {value.scalar_type}"
            raise UnsupportedError(f"plan {self._plan.name!r} {role} value {vid} is {name}; "
                                   "this runtime supports float32, float16, int32 and int64 "
                                   "only")
        if not _row_major(value.sizes, value.dim_order):
            raise UnsupportedError(f"plan {self._plan.name!r} {role} value {vid} has dim order "
                                   f"{list(value.dim_order)} for sizes {list(value.sizes)} (a "
                                   "layout such as channels_last); this runtime needs "
                                   "contiguous row-major tensors")
        return value

    def _buffer(self, vid: int, file):
        """The GPU buffer of plan tensor ``vid``; plan constants are uploaded on first use."""
        if vid not in self._plan_buffers:
            t = self._plan_tensor(vid, "argument")
            buf = self._resources.buffer(self._storage.nbytes(self._graph.values[vid]),
                                        f"{self._plan.name} value {vid}")
            if t.data_buffer_idx > 0 or t.external:
                upload_constant(self._device, self._storage, buf,
                                file.plan_constant_bytes(t, f"plan {self._plan.name!r} value {vid}"),
                                t.dtype, f"plan {self._plan.name!r} constant value {vid}")
            elif vid in self._mutable:
                self._state.add(buf, buf.size, None, f"plan value {vid} (mutable buffer)")
            self._plan_buffers[vid] = buf
        return self._plan_buffers[vid]

    def _plan_constant(self, vid: int, file):
        """The file bytes of plan constant ``vid`` (e.g. scales a kernel's build checks),
        or None for a tensor the plan computes."""
        t = self._plan.values[vid]
        if isinstance(t, PlanTensor) and (t.data_buffer_idx > 0 or t.external):
            return file.plan_constant_bytes(t, f"plan {self._plan.name!r} value {vid}")
        return None

    async def _build_delegate(self, index: int, call: DelegateCall, file, pipelines) -> None:
        vk = delegate_of(self._plan, index, call)
        graph = vk.graph
        label = f"instruction {index} delegate {call.delegate_index}"
        io = {}
        for gid, pid in zip(graph.input_ids + graph.output_ids, call.args):
            gt, pt = graph.values[gid], self._plan_tensor(pid, "delegate argument")
            if gt.numel != pt.numel or \
                    self._storage.dtype(gt.dtype) is not self._storage.dtype(pt.dtype):
                raise InputError(f"{label}: graph value {gid} ({gt.dtype.name}"
                                 f"{list(gt.shape)}) does not fit plan value {pid} "
                                 f"({pt.dtype.name}{list(pt.sizes)})")
            io[gid] = self._buffer(pid, file)
        plan_ids = dict(zip(graph.input_ids + graph.output_ids, call.args))
        self._delegates_built += 1
        key = self._delegates_built

        def setup(ctx):
            self._attach(ctx, key, plan_ids)
            dynamic.enter_delegate(self._dyn, key, graph.input_ids, plan_ids)

        ctx = await build_delegate(self._device, vk, file.named, io, self._resources,
                                   self._recording, pipelines, label, self._options, self._storage,
                                   setup=setup)
        dynamic.leave_delegate(self._dyn, key, graph.output_ids, plan_ids)
        self.kernels += [dict(k, delegate=call.delegate_index) for k in ctx.kernels]
        self._id_checks.add(ctx.id_checks, dict(zip(graph.input_ids, call.args)).get,
                           self._plan.inputs)

    async def _build_kernel(self, index: int, call: KernelCall, file, pipelines) -> None:
        op = kernel_op(self._plan, call)
        label = f"instruction {index} kernel"
        handler = registry.lookup(op.name, f"{label} {'::'.join(self._plan.operators[call.op_index])}")
        ctx = BuildContext(self._device, self._graph, self._resources, self._recording, pipelines,
                           label, self._options, self._storage)
        for vid in op.args:
            value = self._plan.values[vid]
            # tensors inside a tensor list (index/index_put indices) are operands too
            items = value.items if getattr(value, "kind", "") in (
                "tensor_list", "optional_tensor_list") else (vid,)
            for item in items:
                if item >= 0 and isinstance(self._plan.values[item], PlanTensor):
                    ctx.buffers[item] = self._buffer(item, file)
        ctx.io_ids = set(ctx.buffers)  # plan buffers persist: views copy, never alias
        ctx.plan_bytes = lambda vid: self._plan_constant(vid, file)  # what a build checks
        self._attach(ctx, -1, {vid: vid for vid in self._plan.inputs})
        ctx.begin_op(0, op)
        dynamic.track(ctx, op)
        await call_handler(handler, ctx, op)
        self._id_checks.add(ctx.id_checks, lambda vid: vid, self._plan.inputs)
        self.kernels += [dict(k, delegate=None, kernel="::".join(self._plan.operators[call.op_index]))
                         for k in ctx.kernels]

    def _attach(self, ctx, key: int, plan_ids: dict) -> None:
        ctx.dyn, ctx.graph_key, ctx.plan_ids, ctx.state = self._dyn, key, plan_ids, self._state
        ctx.before_op = dynamic.track

    def _build_move(self, index: int, call: MoveCall, file) -> None:
        src, dst = self._plan.values[call.move_from], self._plan.values[call.move_to]
        if not (isinstance(src, PlanTensor) and isinstance(dst, PlanTensor)):
            raise UnsupportedError(f"instruction {index} moves a {src.kind} value; only tensor "
                                   "moves are supported")
        size = self._storage.nbytes(self._graph.values[call.move_to])
        self._recording.steps.append(Copy(self._buffer(call.move_from, file),
                                         self._buffer(call.move_to, file), size, "move"))

    # --- what it is ----------------------------------------------------------------
    @property
    def metadata(self) -> MethodMeta:
        """Inputs and outputs (shape, dtype, dim order), delegates and instruction count,
        as ExecuTorch's ``Method.metadata`` (the same as ``Program.metadata(name)``)."""
        return method_meta(self._plan)

    # --- execute -------------------------------------------------------------------
    def input_specs(self) -> list[tuple[tuple[int, ...], str]]:
        return [(tuple(self._plan.values[v].sizes), self._plan.values[v].dtype.name)
                for v in self._plan.inputs]

    async def execute(self, inputs, *, as_numpy: bool | None = None, profile: bool = False,
                      argmax: bool = False, wait: bool = True, sample: Sample | None = None):
        """Run once. ``inputs``: one array per plan input (forms: runtime/inputs.py).

        With ``profile=True`` the GPU time of every dispatch is kept in
        ``method.last_profile`` (timestamp queries; wall time without them).
        With ``argmax=True`` the result is ``[index]``: torch.argmax of output 0's last row
        (along its last dim), found on the GPU; only those 4 bytes are read back (greedy
        decoding: runtime/readout.py). The other outputs are not read. Then an input may
        be ``readout.LastArgmax()``: the previous execute's index, copied on the GPU; and
        ``wait=False`` returns at once with a ``PendingArgmax`` (``await`` it for
        ``[index]``), so the host prepares the next step while the GPU runs this one.
        ``sample=readout.Sample(temperature, seed, draw)`` (with ``argmax=True``): the
        index is drawn from softmax(row / temperature) on the GPU instead.
        """
        self._check_open("is closed (its program or Runtime was closed); load the program "
                         "again to run it")
        readout.check_request(argmax, wait, sample, profile)
        bound = bind(inputs, self._plan, self._storage, self._dyn, self.name, argmax)
        if argmax:
            await self._picker.ready(self._plan, self._plan_buffers, self._storage,
                                     fed=bool(bound.feeds))
        async with self._lock:  # the execute-time integers belong to this call only
            self._check_open("was closed")  # by another thread while this one waited
            # held open: a Runtime.close() from another thread waits for the uploads and
            # the run instead of destroying the buffers they name
            with self._device.in_use():
                out_shapes = self._host_steps(bound)
                for vid, data in bound.uploads:
                    upload(self._device, self._plan_buffers[vid], data)
                self._id_checks.reset(upload, self._device)
                raw, times = [], []
                if argmax:
                    feeds = [self._plan_buffers[v] for v in bound.feeds]
                    if not wait:
                        return self._picker.submit(prod(out_shapes[0]), feeds, sample)
                    raw, times = await self._picker.run(prod(out_shapes[0]), feeds, sample,
                                                        profile)
                elif self._outputs:
                    raw, times = await self._device.run(self._recording, self._outputs,
                                                       self._staging, profile=profile)
        self._id_checks.check_readback(raw)
        if profile:
            self.last_profile = self._profile_rows(times)
        if argmax:
            return readout.index_of(raw)
        return self._read_outputs(raw, out_shapes, as_numpy)

    def _check_open(self, what: str) -> None:
        if self.closed:
            raise ClosedError(f"method {self.name!r} {what}")

    def _host_steps(self, bound) -> list[tuple]:
        """The steps run on the host before the submit (SymInts, actual shapes; their
        uploads), then the id checks of the host ids; each output's actual shape."""
        env = self._dyn
        env.values, env.host_inputs = bound.shapes, bound.host_inputs
        try:
            for buf, data in (env.run(self._recording) if env.active else ()):
                upload(self._device, buf, data)
            out_shapes = [env.shape(-1, vid, getattr(self._plan.values[vid], "sizes", ()))
                          for vid in self._plan.outputs]
        finally:
            env.host_inputs = {}
        # after the host steps, whose checks (e.g. a position past the KV cache) say more
        self._id_checks.check_inputs(bound.id_data, bound.id_shapes)
        return out_shapes

    def _read_outputs(self, raw, out_shapes, as_numpy: bool | None) -> list:
        as_numpy = numpy_available() if as_numpy is None else as_numpy
        outs, raw = [], iter(raw)
        for vid, shape in zip(self._plan.outputs, out_shapes):
            t = self._plan.values[vid]
            if self._scalar_output(vid):
                outs.append(t.value)
                continue
            item = self._storage.dtype(t.dtype).itemsize
            data = dynamic.from_padded(next(raw), shape, t.sizes, item)
            outs.append(output(self._storage.from_storage(data, t.dtype), shape, t.dtype,
                               as_numpy))
        return outs

    def reset(self) -> None:
        """Restore the state that persists across executes (mutable buffers, KV caches
        held as delegate constants) to its initial value."""
        if self.closed:
            raise InputError(f"method {self.name!r} is closed")
        self._state.reset()

    def _profile_rows(self, times: list[float]) -> list[dict]:
        """One row per op: its dispatches' times summed (views and copies show 0)."""
        rows, at = [], 0
        for k in self.kernels:
            n = k["dispatches"]
            rows.append(dict(k, us=sum(times[at:at + n])))
            at += n
        return rows

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            # An execute in flight (another task or thread) releases them when it ends.
            self._lock.when_free(self._resources.release)


@dataclass(frozen=True)
class GpuWork:
    """``gpu_work(method)``: the GPU work an execute replays, by parts."""

    device: object  # the GpuDevice
    recording: Recording  # the steps, dispatch grids as the last execute set them
    inputs: list  # one Buffer per plan input, in input order, written before each run
    outputs: list  # (Buffer, bytes) copied into ``staging``: the tensor outputs in order,
    #               then the id-check flags (runtime/id_checks.py)
    staging: object  # the map-read Buffer they are copied into (None: nothing read back)
    storage: object  # how float16 is held (runtime/storage.py): to_storage / from_storage
    # what an execute(argmax=True) submits (the LastArgmax copies, ``recording``'s steps,
    # the argmax); None before the first one
    pick_recording: Recording | None


def gpu_work(method: Method) -> GpuWork:
    """A loaded method's recorded work and the buffers it reads and writes, for tools
    and tests that inspect it or replay it outside ``execute`` (bench/roundtrip.py drives
    it from plain JS). A function, not a Method attribute: a Method shows only
    ExecuTorch's API."""
    m = method
    return GpuWork(m._device, m._recording, [m._plan_buffers[vid] for vid in m._plan.inputs],
                   list(m._outputs), m._staging, m._storage, m._picker.recording)
