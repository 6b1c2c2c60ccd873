"""Building one Vulkan delegate graph into GPU work, once, at load.

Buffers: graph inputs/outputs use the Method's plan-level buffers; constants
and ``mem_obj_id < 0`` tensors get their own; the rest share one buffer per
``mem_obj_id`` (the exporter planned those lifetimes), except an op output that
would share with one of the op's own inputs, which WebGPU forbids in one
dispatch. Every buffer lands in the ``Resources`` list so a failed load can
destroy what it made.
"""

from __future__ import annotations

from .. import formats
from ..errors import FormatError, GpuLimitError, UnsupportedError
from ..gpu.interface import Buffer, Dispatch, fold_grid
from ..graph import Graph, Scalar, TensorValue
from ..ops import registry

STORAGE = ("storage", "copy_src", "copy_dst")


class Resources:
    """GPU buffers owned by one Method: destroyed together on close or failure."""

    def __init__(self, device):
        self.device = device
        self.buffers: list[Buffer] = []

    def buffer(self, size: int, label: str, usage=STORAGE) -> Buffer:
        limit = self.device.limit("maxStorageBufferBindingSize", 1 << 27)
        if "storage" in usage and size > limit:
            raise GpuLimitError(f"{label} needs {size} bytes; the adapter binds at most {limit}")
        buf = self.device.create_buffer(size, usage, label)
        self.buffers.append(buf)
        return buf

    def release(self) -> None:
        for buf in self.buffers:
            self.device.destroy_buffer(buf)
        self.buffers = []


class BuildContext:
    """What an op build function sees: its graph, buffers, pipelines and the recording."""

    def __init__(self, device, graph: Graph, resources: Resources, recording,
                 pipelines: dict, label: str):
        self.device, self.graph, self.resources = device, graph, resources
        self.recording, self.pipelines, self.label = recording, pipelines, label
        self.buffers: dict[int, Buffer] = {}
        self.op_index = -1
        self.kernels: list[dict] = []  # what ran where, for inspect/run output

    # --- arguments -----------------------------------------------------------------
    def where(self, op) -> str:
        return f"{self.label} op {self.op_index} {op.name}"

    def args(self, op, count: int) -> tuple[int, ...]:
        if len(op.args) != count:
            raise FormatError(f"{op.name} takes {count} arguments, found {len(op.args)}",
                              field=self.where(op))
        return op.args

    def tensor(self, vid: int, op) -> TensorValue:
        value = self.graph.values[vid]
        if not isinstance(value, TensorValue):
            raise FormatError(f"{op.name}: value {vid} should be a tensor, found {value.kind}",
                              field=self.where(op))
        return value

    def float_tensor(self, vid: int, op) -> TensorValue:
        t = self.tensor(vid, op)
        if t.dtype.name != "float32":
            raise UnsupportedError(f"{op.name}: value {vid} is {t.dtype.name}; this runtime "
                                   f"supports float32 tensors only ({self.where(op)})")
        return t

    def float_scalar(self, vid: int, default: float) -> float:
        value = self.graph.values[vid]
        if isinstance(value, Scalar) and value.kind in ("int", "double"):
            return float(value.value)
        return default

    def limit(self, name: str, default: int) -> int:
        return self.device.limit(name, default)

    # --- GPU objects -----------------------------------------------------------------
    async def pipeline(self, shader: str, constants: dict, entry: str = "main"):
        key = (shader, entry, tuple(sorted(constants.items())))
        if key not in self.pipelines:
            self.pipelines[key] = await self.device.create_pipeline(
                registry.shader_source(shader), entry, constants, f"{shader}:{entry}")
        return self.pipelines[key]

    def uniform(self, data: bytes, label: str) -> Buffer:
        data = data + bytes(-len(data) % 16)
        buf = self.resources.buffer(len(data), label, ("uniform", "copy_dst"))
        self.device.write_buffer(buf, data)
        return buf

    def grid(self, groups: int) -> tuple[int, int, int]:
        return fold_grid(groups, self.limit("maxComputeWorkgroupsPerDimension", 65535))

    def dispatch(self, op, pipeline, bindings, grid) -> None:
        entries = []
        for binding, target in bindings:
            buf = target if isinstance(target, Buffer) else self.buffers[target]
            size = buf.size if isinstance(target, Buffer) else _bind_size(self.graph, target)
            entries.append((binding, buf, size))
        group = self.device.bind_group(pipeline, entries, f"{op.name} #{self.op_index}")
        self.recording.steps.append(Dispatch(pipeline, group, grid, op.name))


def _bind_size(graph: Graph, vid: int) -> int:
    return max(4, (graph.values[vid].nbytes + 3) & ~3)


async def build_delegate(device, vk: formats.VulkanDelegate, named: formats.NamedData,
                         io_buffers: dict[int, Buffer], resources: Resources, recording,
                         pipelines: dict, label: str) -> BuildContext:
    """Allocate, upload constants, and record every op of one Vulkan delegate."""
    graph = vk.graph
    ctx = BuildContext(device, graph, resources, recording, pipelines, label)
    ctx.buffers.update(io_buffers)
    handlers = [registry.lookup(op.name, f"{label} op {i}") for i, op in enumerate(graph.ops)]
    _allocate(ctx, vk, named)
    for i, (op, handler) in enumerate(zip(graph.ops, handlers)):
        ctx.op_index = i
        await handler(ctx, op)
    return ctx


def _allocate(ctx: BuildContext, vk, named) -> None:
    graph = ctx.graph
    dedicated = _outputs_aliasing_inputs(graph)
    pools: dict[int, int] = {}
    for vid, v in enumerate(graph.values):
        if isinstance(v, TensorValue) and vid not in ctx.buffers and v.constant_id < 0 \
                and v.mem_obj_id >= 0 and vid not in dedicated:
            pools[v.mem_obj_id] = max(pools.get(v.mem_obj_id, 4), _bind_size(graph, vid))
    pool_buffers = {m: ctx.resources.buffer(size, f"{ctx.label} mem_obj {m}")
                    for m, size in sorted(pools.items())}
    for vid, v in enumerate(graph.values):
        if not isinstance(v, TensorValue) or vid in ctx.buffers:
            continue
        if v.constant_id >= 0:
            ref = graph.constants[v.constant_id]
            data = formats.resolve(ref, v.nbytes, named, vk.constant_bytes).data
            buf = ctx.resources.buffer(_bind_size(graph, vid), f"{ctx.label} constant {ref.index}")
            _upload(ctx.device, buf, data)
        elif v.mem_obj_id >= 0 and vid not in dedicated:
            buf = pool_buffers[v.mem_obj_id]
        else:
            buf = ctx.resources.buffer(_bind_size(graph, vid), f"{ctx.label} value {vid}")
        ctx.buffers[vid] = buf


def _upload(device, buf: Buffer, data: memoryview) -> None:
    if len(data) % 4:  # queue writes must be multiples of 4 bytes
        data = bytes(data) + bytes(-len(data) % 4)
    if len(data):
        device.write_buffer(buf, data)


def _outputs_aliasing_inputs(graph: Graph) -> set[int]:
    """Op outputs whose mem_obj_id matches one of the same op's inputs."""
    out = set()
    for op in graph.ops:
        if not op.args:
            continue
        result = graph.values[op.args[-1]]
        if not isinstance(result, TensorValue) or result.mem_obj_id < 0:
            continue
        for a in op.args[:-1]:
            v = graph.values[a]
            if isinstance(v, TensorValue) and v.mem_obj_id == result.mem_obj_id:
                out.add(op.args[-1])
    return out
