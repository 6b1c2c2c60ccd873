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

from ..errors import ClosedError, DataTooSmallError, InputError, UnsupportedError
from ..formats.pte import DelegateCall, ExecutionPlan, KernelCall, MoveCall, PlanTensor
from ..gpu.interface import Copy, Recording
from ..ops import registry
from ..graph import Scalar
from . import dynamic
from .build import BuildContext, Resources, build_delegate, call_handler, upload
from .exclusive import Exclusive
from ..plan_graph import delegate_of, kernel_op, linear_chain, plan_as_graph
from .id_checks import IdChecks
from .inputs import read_input, read_list
from .state import State, mutable_plan_values
from ..tensor import numpy_available, output

# int64 is held as int32, bool as u32 (storage.py)
PLAN_DTYPES = ("float32", "float16", "int32", "int64", "bool")
SCALAR_OUTPUTS = ("int", "bool", "double")  # a constant method's outputs (get_max_seq_len)


def _row_major(sizes, dim_order) -> bool:
    """Whether a dim order lays the elements out as row-major does: the dims larger than
    1 appear in increasing order (size-1 dims may sit anywhere)."""
    if not dim_order:
        return True
    moving = [d for d in dim_order if 0 <= d < len(sizes) and sizes[d] != 1]
    return moving == sorted(moving) and sorted(dim_order) == list(range(len(sizes)))


class Method:
    def __init__(self, program, plan: ExecutionPlan, device, storage):
        self.program, self.plan, self.device = program, plan, device
        self.options = program.runtime.options
        self.storage = storage  # how float16 is held (runtime/storage.py), one rule per program
        self.name = plan.name
        self.graph = plan_as_graph(plan)
        self.resources = Resources(device, getattr(program, "budget", None))
        self.recording = Recording()
        self.plan_buffers: dict = {}
        self.outputs: list = []
        self.staging = None
        self.kernels: list[dict] = []  # one entry per op: where it runs, how, dispatches
        self.id_checks = IdChecks()  # ids outside a table: InputError (id_checks.py)
        self.notes: list[str] = []
        self.load_seconds = 0.0
        self.last_profile: list[dict] | None = None
        self._lock = Exclusive()  # safe across threads and event loops
        self.closed = False
        self.dyn = dynamic.DynamicEnv()  # SymInts and actual sizes, per execute
        self.state = State(device)  # what persists across executes; reset() restores it
        self._mutable = mutable_plan_values(plan)
        self._delegates_built = 0
        self.dyn.plan_inputs = set(plan.inputs)

    # --- load ----------------------------------------------------------------------
    async def _build(self, file, pipelines: dict) -> None:
        start = time.perf_counter()
        plan = self.plan
        for vid in plan.inputs:
            if self._plan_tensor(vid, "input").shape_dynamism:
                self.dyn.dynamic.add(("shape", -1, vid))
        for vid in plan.outputs:
            if not self._scalar_output(vid):
                self._plan_tensor(vid, "output")
        await self.device.push_error_scopes()
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
                size = self.storage.nbytes(self.graph.values[vid])
                self.outputs.append((self._buffer(vid, file), size))
            self.outputs += self.id_checks.readbacks()  # read back after the outputs
            total = sum(size for _, size in self.outputs)
            if self.outputs:
                self.staging = self.resources.buffer(total, f"{plan.name} outputs staging",
                                                     ("map_read", "copy_dst"))
            built = True
        finally:
            # On failure the scopes are still popped, but the first error is the one raised.
            await self.device.pop_error_scopes(f"loading method {plan.name!r}",
                                               raise_errors=built)
        graphs = [self.graph] + [d.graph.graph for d in plan.delegates if d.graph]
        self.notes = self.storage.notes([v for g in graphs for v in g.values])
        self.load_seconds = time.perf_counter() - start

    def _scalar_output(self, vid: int) -> bool:
        """An Int/Bool/Double output: a constant method's value, returned as is."""
        value = self.plan.values[vid]
        return isinstance(value, Scalar) and value.kind in SCALAR_OUTPUTS

    def _plan_tensor(self, vid: int, role: str) -> PlanTensor:
        value = self.plan.values[vid]
        if not isinstance(value, PlanTensor):
            raise UnsupportedError(f"plan {self.plan.name!r} {role} value {vid} is a "
                                   f"{value.kind}; only tensor inputs/outputs are supported")
        if value.dtype is None or value.dtype.name not in PLAN_DTYPES:
            name = value.dtype.name if value.dtype else f"ScalarType {value.scalar_type}"
            raise UnsupportedError(f"plan {self.plan.name!r} {role} value {vid} is {name}; "
                                   "this runtime supports float32, float16, int32 and int64 "
                                   "only")
        if not _row_major(value.sizes, value.dim_order):
            raise UnsupportedError(f"plan {self.plan.name!r} {role} value {vid} has dim order "
                                   f"{list(value.dim_order)} for sizes {list(value.sizes)} (a "
                                   "layout such as channels_last); this runtime needs "
                                   "contiguous row-major tensors")
        return value

    def _buffer(self, vid: int, file):
        """The GPU buffer of plan tensor ``vid``; plan constants are uploaded on first use."""
        if vid not in self.plan_buffers:
            t = self._plan_tensor(vid, "argument")
            buf = self.resources.buffer(self.storage.nbytes(self.graph.values[vid]),
                                        f"{self.plan.name} value {vid}")
            if t.data_buffer_idx > 0 or t.external:
                upload(self.device, buf, self.storage.to_storage(
                    self._constant(vid, t, file), t.dtype,
                    f"plan {self.plan.name!r} constant value {vid}", UnsupportedError))
            elif vid in self._mutable:
                self.state.add(buf, buf.size, None, f"plan value {vid} (mutable buffer)")
            self.plan_buffers[vid] = buf
        return self.plan_buffers[vid]

    def _constant(self, vid: int, t: PlanTensor, file):
        nbytes = t.numel * t.dtype.itemsize
        where = f"plan {self.plan.name!r} value {vid}"
        if t.external:
            data, source = file.named.lookup(t.fully_qualified_name)
            if len(data) < nbytes:
                raise DataTooSmallError(f"{where}: named data {t.fully_qualified_name!r} in "
                                        f"{source}", nbytes, len(data))
            return data[:nbytes]
        return file.constant_tensor_bytes(t, nbytes, where)

    async def _build_delegate(self, index: int, call: DelegateCall, file, pipelines) -> None:
        vk = delegate_of(self.plan, index, call)
        graph = vk.graph
        label = f"instruction {index} delegate {call.delegate_index}"
        io = {}
        for gid, pid in zip(graph.input_ids + graph.output_ids, call.args):
            gt, pt = graph.values[gid], self._plan_tensor(pid, "delegate argument")
            if gt.numel != pt.numel or \
                    self.storage.dtype(gt.dtype) is not self.storage.dtype(pt.dtype):
                raise InputError(f"{label}: graph value {gid} ({gt.dtype.name}"
                                 f"{list(gt.shape)}) does not fit plan value {pid} "
                                 f"({pt.dtype.name}{list(pt.sizes)})")
            io[gid] = self._buffer(pid, file)
        plan_ids = dict(zip(graph.input_ids + graph.output_ids, call.args))
        self._delegates_built += 1
        key = self._delegates_built

        def setup(ctx):
            self._attach(ctx, key, plan_ids)
            dynamic.enter_delegate(self.dyn, key, graph.input_ids, plan_ids)

        ctx = await build_delegate(self.device, vk, file.named, io, self.resources,
                                   self.recording, pipelines, label, self.options, self.storage,
                                   setup=setup)
        dynamic.leave_delegate(self.dyn, key, graph.output_ids, plan_ids)
        self.kernels += [dict(k, delegate=call.delegate_index) for k in ctx.kernels]
        self.id_checks.add(ctx.id_checks, dict(zip(graph.input_ids, call.args)).get,
                           self.plan.inputs)

    async def _build_kernel(self, index: int, call: KernelCall, file, pipelines) -> None:
        op = kernel_op(self.plan, call)
        label = f"instruction {index} kernel"
        handler = registry.lookup(op.name, f"{label} {'::'.join(self.plan.operators[call.op_index])}")
        ctx = BuildContext(self.device, self.graph, self.resources, self.recording, pipelines,
                           label, self.options, self.storage)
        for vid in op.args:
            value = self.plan.values[vid]
            # tensors inside a tensor list (index/index_put indices) are operands too
            items = value.items if getattr(value, "kind", "") in (
                "tensor_list", "optional_tensor_list") else (vid,)
            for item in items:
                if item >= 0 and isinstance(self.plan.values[item], PlanTensor):
                    ctx.buffers[item] = self._buffer(item, file)
        ctx.io_ids = set(ctx.buffers)  # plan buffers persist: views copy, never alias
        self._attach(ctx, -1, {vid: vid for vid in self.plan.inputs})
        ctx.begin_op(0, op)
        dynamic.track(ctx, op)
        await call_handler(handler, ctx, op)
        self.id_checks.add(ctx.id_checks, lambda vid: vid, self.plan.inputs)
        self.kernels += [dict(k, delegate=None, kernel="::".join(self.plan.operators[call.op_index]))
                         for k in ctx.kernels]

    def _attach(self, ctx, key: int, plan_ids: dict) -> None:
        ctx.dyn, ctx.graph_key, ctx.plan_ids, ctx.state = self.dyn, key, plan_ids, self.state
        ctx.before_op = dynamic.track

    def _build_move(self, index: int, call: MoveCall, file) -> None:
        src, dst = self.plan.values[call.move_from], self.plan.values[call.move_to]
        if not (isinstance(src, PlanTensor) and isinstance(dst, PlanTensor)):
            raise UnsupportedError(f"instruction {index} moves a {src.kind} value; only tensor "
                                   "moves are supported")
        size = self.storage.nbytes(self.graph.values[call.move_to])
        self.recording.steps.append(Copy(self._buffer(call.move_from, file),
                                         self._buffer(call.move_to, file), size, "move"))

    # --- execute -------------------------------------------------------------------
    def input_specs(self) -> list[tuple[tuple[int, ...], str]]:
        return [(tuple(self.plan.values[v].sizes), self.plan.values[v].dtype.name)
                for v in self.plan.inputs]

    async def execute(self, inputs, *, as_numpy: bool | None = None, profile: bool = False):
        """Run once. ``inputs``: one array per plan input (forms: runtime/inputs.py).

        With ``profile=True`` the GPU time of every dispatch is kept in
        ``method.last_profile`` (timestamp queries; wall time without them).
        """
        if self.closed:
            raise ClosedError(f"method {self.name!r} is closed (its program or Runtime was "
                              "closed); load the program again to run it")
        inputs = read_list(inputs, len(self.plan.inputs), self.name)
        hosts, env, shapes, host_inputs = [], self.dyn, {}, {}
        id_hosts = []  # unpadded storage bytes and shape of each input, for the id checks
        for i, (x, vid) in enumerate(zip(inputs, self.plan.inputs)):
            want = self.plan.values[vid]
            t = read_input(x, i, want.dtype.name)
            if t.dtype.name != want.dtype.name:
                raise InputError(f"input {i}: expected dtype {want.dtype.name}, got "
                                 f"{t.dtype.name}")
            data = self.storage.to_storage(t.memoryview(), t.dtype, f"input {i}")
            id_hosts.append((data, t.shape))
            if env.is_dynamic(-1, vid):
                dynamic.check_dynamic_shape(t.shape, want.sizes, i)
                shapes[("shape", -1, vid)] = t.shape
                data = dynamic.to_padded(data, t.shape, want.sizes,
                                         self.storage.dtype(t.dtype).itemsize, f"input {i}")
            elif t.shape != tuple(want.sizes):
                raise InputError(f"input {i}: expected shape {list(want.sizes)}, got "
                                 f"{list(t.shape)}")
            host_inputs[vid] = t
            hosts.append((vid, data))
        async with self._lock:  # the execute-time integers belong to this call only
            if self.closed:  # closed by another thread while this one waited
                raise ClosedError(f"method {self.name!r} was closed")
            # held open: a Runtime.close() from another thread waits for the uploads and
            # the run instead of destroying the buffers they name
            with self.device.in_use():
                env.values, env.host_inputs = shapes, host_inputs
                try:
                    for buf, data in (env.run(self.recording) if env.active else ()):
                        upload(self.device, buf, data)
                    out_shapes = [env.shape(-1, vid, getattr(self.plan.values[vid], "sizes", ()))
                                  for vid in self.plan.outputs]
                finally:
                    env.host_inputs = {}
                # after the host steps, whose checks (e.g. a position past the KV cache) say more
                self.id_checks.check_inputs([d for d, _ in id_hosts], [sh for _, sh in id_hosts])
                for vid, data in hosts:
                    upload(self.device, self.plan_buffers[vid], data)
                self.id_checks.reset(upload, self.device)
                raw, times = [], []
                if self.outputs:
                    raw, times = await self.device.run(self.recording, self.outputs, self.staging,
                                                       profile=profile)
        flags = len(self.id_checks.checks)  # read back after the outputs
        self.id_checks.check_flags(raw[len(raw) - flags:] if flags else [])
        if profile:
            self.last_profile = self._profile_rows(times)
        as_numpy = numpy_available() if as_numpy is None else as_numpy
        outs, raw = [], iter(raw)
        for vid, shape in zip(self.plan.outputs, out_shapes):
            t = self.plan.values[vid]
            if self._scalar_output(vid):
                outs.append(t.value)
                continue
            item = self.storage.dtype(t.dtype).itemsize
            data = dynamic.from_padded(next(raw), shape, t.sizes, item)
            outs.append(output(self.storage.from_storage(data, t.dtype), shape, t.dtype,
                               as_numpy))
        return outs

    def reset(self) -> None:
        """Restore the state that persists across executes (mutable buffers, KV caches
        held as delegate constants) to its initial value."""
        if self.closed:
            raise InputError(f"method {self.name!r} is closed")
        self.state.reset()

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
            self._lock.when_free(self.resources.release)
