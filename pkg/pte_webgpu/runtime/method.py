"""A loaded method: the plan's instruction chain built into GPU work once.

Load: one buffer per plan tensor the chain touches, each delegate built into
the shared Recording, staging buffers for the outputs. Execute: write the
inputs, replay the recording with one submit, read the outputs.
"""

from __future__ import annotations

import asyncio
import time

from .. import formats
from ..errors import InputError, UnsupportedError
from ..formats.pte import DelegateCall, ExecutionPlan, PlanTensor
from ..gpu.interface import Recording
from .build import Resources, build_delegate
from .tensor import numpy_available, output, to_host_tensor


class Method:
    def __init__(self, program, plan: ExecutionPlan, device):
        self.program, self.plan, self.device = program, plan, device
        self.name = plan.name
        self.resources = Resources(device)
        self.recording = Recording()
        self.plan_buffers: dict = {}
        self.staging: list = []
        self.kernels: list[dict] = []
        self.load_seconds = 0.0
        self._lock = asyncio.Lock()
        self.closed = False

    # --- load ----------------------------------------------------------------------
    async def _build(self, file, pipelines: dict) -> None:
        start = time.perf_counter()
        plan = self.plan
        for vid in plan.inputs + plan.outputs:
            self._plan_tensor(vid, "input" if vid in plan.inputs else "output")
        await self.device.push_error_scopes()
        try:
            for i, ins in enumerate(plan.instructions):
                if not isinstance(ins, DelegateCall):
                    detail = (f" {'::'.join(plan.operators[ins.op_index])}"
                              if ins.kind == "kernel" else "")
                    raise UnsupportedError(
                        f"instruction {i} of {plan.name!r} is a {ins.kind} call{detail}; this "
                        "runtime runs Vulkan delegate calls only")
                await self._build_delegate(i, ins, file, pipelines)
            for vid in plan.outputs:
                buf = self._buffer(vid)
                staging = self.resources.buffer(buf.size, f"output {vid} staging",
                                                 ("map_read", "copy_dst"))
                self.staging.append((buf, staging, buf.size))
        finally:
            await self.device.pop_error_scopes(f"loading method {plan.name!r}")
        self.load_seconds = time.perf_counter() - start

    def _plan_tensor(self, vid: int, role: str) -> PlanTensor:
        value = self.plan.values[vid]
        if not isinstance(value, PlanTensor):
            raise UnsupportedError(f"plan {self.plan.name!r} {role} value {vid} is a "
                                   f"{value.kind}; only tensor inputs/outputs are supported")
        if value.dtype is None or value.dtype.name != "float32":
            name = value.dtype.name if value.dtype else f"ScalarType {value.scalar_type}"
            raise UnsupportedError(f"plan {self.plan.name!r} {role} value {vid} is {name}; "
                                   "this runtime supports float32 only")
        return value

    def _buffer(self, vid: int):
        if vid not in self.plan_buffers:
            t = self._plan_tensor(vid, "delegate argument")
            self.plan_buffers[vid] = self.resources.buffer(
                t.numel * t.dtype.itemsize, f"{self.plan.name} value {vid}")
        return self.plan_buffers[vid]

    async def _build_delegate(self, index: int, call: DelegateCall, file, pipelines) -> None:
        delegate = self.plan.delegates[call.delegate_index]
        label = f"instruction {index} delegate {call.delegate_index}"
        if delegate.id != formats.VULKAN_BACKEND_ID or delegate.graph is None:
            raise UnsupportedError(f"{label}: backend {delegate.id!r} is not supported "
                                   f"(only {formats.VULKAN_BACKEND_ID})")
        graph = delegate.graph.graph
        n_in = len(graph.input_ids)
        if len(call.args) != n_in + len(graph.output_ids):
            raise InputError(f"{label}: {len(call.args)} arguments for a graph with {n_in} "
                             f"inputs and {len(graph.output_ids)} outputs")
        io = {}
        for gid, pid in zip(graph.input_ids + graph.output_ids, call.args):
            gt, pt = graph.values[gid], self._plan_tensor(pid, "delegate argument")
            if gt.numel != pt.numel:
                raise InputError(f"{label}: graph value {gid} has {gt.numel} elements but plan "
                                 f"value {pid} has {pt.numel}")
            io[gid] = self._buffer(pid)
        ctx = await build_delegate(self.device, delegate.graph, file.named, io, self.resources,
                                   self.recording, pipelines, label)
        self.kernels += [{"delegate": call.delegate_index, "op": op.name, "runs_on": "gpu"}
                         for op in graph.ops]
        del ctx

    # --- execute -------------------------------------------------------------------
    def input_specs(self) -> list[tuple[tuple[int, ...], str]]:
        return [(tuple(self.plan.values[v].sizes), self.plan.values[v].dtype.name)
                for v in self.plan.inputs]

    async def execute(self, inputs, *, as_numpy: bool | None = None) -> list:
        """Run once. ``inputs``: one array per plan input (see runtime.tensor)."""
        if self.closed:
            raise InputError(f"method {self.name!r} is closed")
        inputs = list(inputs)
        if len(inputs) != len(self.plan.inputs):
            raise InputError(f"method {self.name!r} takes {len(self.plan.inputs)} inputs, "
                             f"got {len(inputs)}")
        hosts = []
        for i, (x, vid) in enumerate(zip(inputs, self.plan.inputs)):
            want = self.plan.values[vid]
            t = to_host_tensor(x, i, want.dtype.name)
            if t.dtype.name != want.dtype.name:
                raise InputError(f"input {i}: expected dtype {want.dtype.name}, got "
                                 f"{t.dtype.name}")
            if t.shape != tuple(want.sizes):
                raise InputError(f"input {i}: expected shape {list(want.sizes)}, got "
                                 f"{list(t.shape)}")
            hosts.append((vid, t))
        async with self._lock:
            for vid, t in hosts:
                self.device.write_buffer(self.plan_buffers[vid], t.memoryview())
            raw = await self.device.run(self.recording, self.staging)
        as_numpy = numpy_available() if as_numpy is None else as_numpy
        outs = []
        for vid, data in zip(self.plan.outputs, raw):
            t = self.plan.values[vid]
            outs.append(output(data[:t.numel * t.dtype.itemsize], t.sizes, t.dtype, as_numpy))
        return outs

    def close(self) -> None:
        if not self.closed:
            self.resources.release()
            self.closed = True
