"""Building one Vulkan delegate graph into GPU work, once, at load.

Buffers: graph inputs/outputs use the Method's plan-level buffers; constants
and ``mem_obj_id < 0`` tensors get their own; the rest share one buffer per
``mem_obj_id`` (the exporter planned those lifetimes), except an op output that
would share with one of the op's own inputs, which WebGPU forbids in one
dispatch. Every buffer lands in the ``Resources`` list so a failed load can
destroy what it made.
"""

from __future__ import annotations

import struct

from .. import formats
from ..errors import FormatError, GpuLimitError, PteError, UnsupportedError, count
from ..gpu.recording import Buffer, Copy, Dispatch, align4, fold_grid
from ..model.dtypes import FLOAT16
from ..model.graph import Graph, ListValue, TensorValue
from ..ops import registry
from ..ops.args import number
from . import fusion
from .id_checks import FLAG_BYTES, IdCheck
from .options import RuntimeOptions
from .state import all_zero
from .storage import WIDE, Storage

STORAGE = ("storage", "copy_src", "copy_dst")


class Resources:
    """GPU buffers owned by one Method: destroyed together on close or failure."""

    def __init__(self, device, budget=None):
        self.device = device
        self.budget = budget  # runtime/budget.py: shared by every Method of a program
        self.buffers: list[Buffer] = []
        self._scratch: dict[str, Buffer] = {}

    def scratch(self, name: str, size: int) -> Buffer:
        """A storage buffer of at least ``size`` bytes shared by every op that asks for
        ``name``: for what one op writes and reads back within its own dispatches (the
        ops run one after another), so a layer's need does not repeat per layer."""
        buf = self._scratch.get(name)
        if buf is None or buf.size < size:
            buf = self._scratch[name] = self.buffer(size, f"scratch: {name}")
        return buf

    def buffer(self, size: int, label: str, usage=STORAGE) -> Buffer:
        limit = self.device.limit("maxStorageBufferBindingSize", 1 << 27)
        if "storage" in usage and size > limit:
            raise GpuLimitError(f"{label} needs {count(size)} bytes; the adapter binds at "
                                f"most {limit}")
        if self.budget is not None:
            self.budget.charge(align4(size), label)
        try:
            buf = self.device.create_buffer(size, usage, label)
        except BaseException:
            if self.budget is not None:
                self.budget.refund(align4(size))
            raise
        self.buffers.append(buf)
        return buf

    def release(self) -> None:
        for buf in self.buffers:
            self.device.destroy_buffer(buf)
            if self.budget is not None:
                self.budget.refund(buf.size)
        self.buffers = []
        self._scratch = {}


class BuildContext:
    """What an op build function sees: its graph, buffers, pipelines and the recording."""

    def __init__(self, device, graph: Graph, resources: Resources, recording,
                 pipelines: dict, label: str, options: dict | None = None,
                 storage: Storage = WIDE):
        self.device, self.graph, self.resources = device, graph, resources
        self.recording, self.pipelines, self.label = recording, pipelines, label
        self.options = RuntimeOptions.of(options)  # Runtime.create(options=...)
        self.storage = storage
        self.buffers: dict[int, Buffer] = {}
        self.io_ids: set[int] = set()  # graph inputs/outputs: they own plan buffers
        self.op_index = -1
        self.kernels: list[dict] = []  # one entry per op: where it runs, dispatch count, ...
        self.id_checks: list[IdCheck] = []  # flags of ops that index by ids (id_checks.py)
        # linear input vid -> the split attention's merge left to that linear's prologue
        # (ops/attention_merge.py): put by the attention, taken by the linear after it
        self.merges: dict = {}
        # Set by the Method (runtime/dynamic.py, runtime/state.py): execute-time integers,
        # this graph's key among them, graph id -> plan id of delegate I/O, persistent state.
        self.dyn = None
        self.graph_key = -1
        self.plan_ids: dict[int, int] = {}
        self.state = None
        self.sources = None  # (delegate, named data): where constants' bytes are


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
        """A tensor the kernels can read: float32, or float16 (f16 when ``half(vid)``,
        else stored as f32)."""
        t = self.tensor(vid, op)
        if t.dtype.name not in ("float32", "float16"):
            raise UnsupportedError(f"{op.name}: value {vid} is {t.dtype.name}; this runtime "
                                   f"supports float32 and float16 tensors only "
                                   f"({self.where(op)})")
        return t

    def int_tensor(self, vid: int, op) -> TensorValue:
        """An integer tensor the kernels read as ``array<i32>``: int32, or int64 (held as
        int32, storage.py)."""
        t = self.tensor(vid, op)
        if t.dtype is None or t.dtype.name not in ("int32", "int64"):
            name = t.dtype.name if t.dtype else "of no dtype"
            raise UnsupportedError(f"{op.name}: value {vid} is {name}; expected an int32 or "
                                   f"int64 tensor ({self.where(op)})")
        return t

    def half(self, vid: int) -> bool:
        """Whether tensor ``vid`` is stored as f16 (then the op runs its f16 kernel)."""
        return self.storage.dtype(self.graph.values[vid].dtype).name == "float16"

    def float_scalar(self, vid: int, default: float) -> float:
        """An Int or Double argument as a float; anything else gives ``default``."""
        return number(self.graph.values[vid], default)

    def constant_bytes(self, vid: int):
        """Constant tensor ``vid``'s bytes as the program stores them (a stacked
        constant's parts joined, runtime/fusion.py); None when it is not a constant. For
        ops that check or repack constants at load (e.g. scales that must be finite)."""
        parts = self.graph.meta.get("concat", {}).get(vid, (vid,))
        out = []
        for part in parts:
            t = self.graph.values[part]
            if self.sources is None or not isinstance(t, TensorValue) or t.constant_id < 0:
                return None
            vk, named = self.sources
            data = formats.resolve(self.graph.constants[t.constant_id], t.nbytes, named,
                                   vk.constant_bytes).data
            out.append(bytes(data[:t.nbytes]))
        return b"".join(out)

    def constant_buffer(self, data: bytes, dtype, label: str) -> Buffer:
        """A buffer holding ``data`` (host bytes of ``dtype``) in the storage dtype: a
        constant an op derives at load (e.g. relaid scales)."""
        n = len(data) // dtype.itemsize * self.storage.dtype(dtype).itemsize
        buf = self.resources.buffer(max(4, (n + 3) & ~3), label)
        upload_constant(self.device, self.storage, buf, data, dtype, label)
        return buf

    def limit(self, name: str, default: int) -> int:
        return self.device.limit(name, default)

    # --- GPU objects -----------------------------------------------------------------
    async def pipeline(self, kernel, constants: dict, entry: str = "main",
                       half: bool = False):
        """``kernel``: a shaders.compose.Kernel; ``half``: its f16 form."""
        key = (kernel.name, entry, tuple(sorted(constants.items())), half)
        if key not in self.pipelines:
            label = f"{kernel.name}:{entry}" + (":f16" if half else "")
            self.pipelines[key] = await self.device.create_pipeline(
                kernel.source(half), entry, constants, label)
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
            size = buf.size if isinstance(target, Buffer) else self.bind_size(target)
            entries.append((binding, buf, size))
        group = self.device.bind_group(pipeline, entries, f"{op.name} #{self.op_index}")
        self.recording.steps.append(Dispatch(pipeline, group, grid, op.name))
        self.kernels[-1]["dispatches"] += 1

    def id_check(self, ids_vid: int, vocab: int, op, negative: bool = False) -> Buffer:
        """A flag buffer the op's kernel sets for an id outside [0, vocab) ([-vocab, vocab)
        when ``negative`` ids count from the end); execute zeroes it, reads it back and
        raises InputError when set (id_checks.py)."""
        flag = self.resources.buffer(FLAG_BYTES, f"{self.where(op)} id flag")
        self.id_checks.append(IdCheck(flag, ids_vid, vocab, self.where(op),
                                      low=-vocab if negative else 0))
        return flag

    def bind_size(self, vid: int) -> int:
        return self.storage.nbytes(self.graph.values[vid])

    def begin_op(self, index: int, op) -> None:
        self.op_index = index
        self.kernels.append({"op": op.name, "index": index, "runs_on": "gpu", "dispatches": 0})

    def note_kernel(self, op, **info) -> None:
        """Record how ``op`` (the current op) runs, e.g. the kernel variant chosen."""
        assert self.kernels[-1]["op"] == op.name, (self.kernels[-1], op.name)
        self.kernels[-1].update(info)

    def copy(self, op, src_vid: int, dst_vid: int) -> None:
        """Record a buffer-to-buffer copy of ``dst``'s bytes from ``src`` (equal sizes)."""
        src, dst = self.graph.values[src_vid], self.graph.values[dst_vid]
        size = self.storage.nbytes(dst)
        if self.storage.nbytes(src) != size:
            raise FormatError(f"{op.name}: value {src_vid} {src.dtype.name}{list(src.shape)} "
                              f"and value {dst_vid} {dst.dtype.name}{list(dst.shape)} differ in "
                              "size", field=self.where(op))
        if self.buffers[src_vid] is not self.buffers[dst_vid] and dst.numel:
            self.recording.steps.append(Copy(self.buffers[src_vid], self.buffers[dst_vid],
                                             size, op.name))

    def view(self, op, src_vid: int, dst_vid: int) -> None:
        """``dst`` holds ``src``'s bytes under another shape: share ``src``'s buffer when
        nothing overwrites it while ``dst`` is still read, else copy (into a buffer of
        its own where the plan put ``dst`` in ``src``'s memory: fusion.py does that)."""
        if dst_vid in self.io_ids or not self._unchanged_while_live(src_vid, dst_vid):
            if self.buffers[dst_vid] is self.buffers[src_vid]:
                self.buffers[dst_vid] = self.resources.buffer(self.bind_size(dst_vid),
                                                              f"{self.label} value {dst_vid}")
            self.copy(op, src_vid, dst_vid)
        else:
            self.buffers[dst_vid] = self.buffers[src_vid]

    def _unchanged_while_live(self, src_vid: int, dst_vid: int) -> bool:
        ops = self.graph.ops
        reads = [j for j in range(self.op_index + 1, len(ops))
                 if dst_vid in _operands(self.graph, ops[j])]
        buf = self.buffers[src_vid]
        return all(self.buffers.get(w) is not buf
                   for j in range(self.op_index + 1, (reads[-1] + 1) if reads else 0)
                   for w in _results(self.graph, ops[j]))


def _operands(graph: Graph, op) -> set[int]:
    """Value ids an op reads (ValueList arguments expanded)."""
    return _expand(graph, op.args[:-1])


def _results(graph: Graph, op) -> set[int]:
    return _expand(graph, op.args[-1:])


def _expand(graph: Graph, ids) -> set[int]:
    out = set()
    for vid in ids:
        value = graph.values[vid]
        if isinstance(value, ListValue) and value.kind == "value_list":
            out.update(value.items)
        else:
            out.add(vid)
    return out


async def build_delegate(device, vk: formats.VulkanDelegate, named: formats.NamedData,
                         io_buffers: dict[int, Buffer], resources: Resources, recording,
                         pipelines: dict, label: str, options: dict | None = None,
                         storage: Storage = WIDE, setup=None) -> BuildContext:
    """Allocate, upload constants, and record every op of one Vulkan delegate.
    ``setup(ctx)`` runs before allocation (the Method attaches state and dynamic shapes);
    ``ctx.before_op(ctx, op)``, when set, runs before each op's handler."""
    graph = vk.graph
    if RuntimeOptions.of(options).fuse:
        graph = fusion.fuse(graph, storage.nbytes,
                            min(device.limit("maxStorageBufferBindingSize", 1 << 27),
                                device.limit("maxBufferSize", 1 << 28)))
    ctx = BuildContext(device, graph, resources, recording, pipelines, label, options, storage)
    ctx.buffers.update(io_buffers)
    ctx.io_ids = set(io_buffers)
    ctx.sources = (vk, named)
    handlers = [registry.lookup(op.name, f"{label} op {i}") for i, op in enumerate(graph.ops)]
    if setup is not None:
        setup(ctx)
    _allocate(ctx, vk, named)
    for i, (op, handler) in enumerate(zip(graph.ops, handlers)):
        ctx.begin_op(i, op)
        if getattr(ctx, "before_op", None) is not None:
            ctx.before_op(ctx, op)
        await call_handler(handler, ctx, op)
        if any(v in ctx.merges for v in op.args[:-1] if isinstance(v, int)):
            # fusion_merge marks only linears whose product takes the merge: a guard
            raise UnsupportedError(f"{ctx.where(op)} left the split attention's merge "
                                   "of its input unrecorded")
    return ctx


async def call_handler(handler, ctx: BuildContext, op) -> None:
    """Run an op's build; argument values its kernel cannot encode (an f32 parameter
    beyond f32's range, a u32 beyond 2^32) become a typed error naming the op."""
    try:
        await handler(ctx, op)
    except PteError:
        raise
    except (OverflowError, struct.error, ValueError, ZeroDivisionError) as e:
        raise UnsupportedError(f"{ctx.where(op)}: an argument is outside what the kernel can "
                               f"take ({type(e).__name__}: {str(e)[:500]})") from None


def _allocate(ctx: BuildContext, vk, named) -> None:
    graph = ctx.graph
    dedicated = _outputs_aliasing_inputs(graph)
    used = _used(graph) if "fused" in graph.meta else None  # what a fused op replaced is not
    pools: dict[int, int] = {}
    for vid, v in enumerate(graph.values):
        if isinstance(v, TensorValue) and vid not in ctx.buffers and v.constant_id < 0 \
                and v.mem_obj_id >= 0 and vid not in dedicated \
                and (used is None or vid in used):
            pools[v.mem_obj_id] = max(pools.get(v.mem_obj_id, 4), ctx.bind_size(vid))
    pool_buffers = {m: ctx.resources.buffer(size, f"{ctx.label} mem_obj {m}")
                    for m, size in sorted(pools.items())}
    constants: dict[tuple, Buffer] = {}  # tensors sharing a constant share its one upload
    in_place = written_in_place(graph)
    stacked = graph.meta.get("concat", {})  # fusion.py: weights of linears fused into one
    for vid, v in enumerate(graph.values):
        if not isinstance(v, TensorValue) or vid in ctx.buffers:
            continue
        if used is not None and vid not in used:
            continue  # what a fused op replaced (a weight now in a stacked one)
        if vid in stacked:
            buf = ctx.buffers[vid] = ctx.resources.buffer(ctx.bind_size(vid),
                                                          f"{ctx.label} stacked value {vid}")
            offset = 0
            for part in stacked[vid]:
                p = graph.values[part]
                data = formats.resolve(graph.constants[p.constant_id], p.nbytes, named,
                                       vk.constant_bytes).data
                upload_constant(ctx.device, ctx.storage, buf, data, p.dtype,
                                f"{ctx.label} constant value {part}", offset)
                offset += ctx.bind_size(part)
            continue
        if v.constant_id >= 0:
            ref = graph.constants[v.constant_id]
            key = constant_key(ref, v, vid, in_place)
            if key not in constants:
                data = formats.resolve(ref, v.nbytes, named, vk.constant_bytes).data
                what = f"{ctx.label} constant value {vid}"
                constants[key] = ctx.resources.buffer(ctx.bind_size(vid),
                                                      f"{ctx.label} constant {ref.index}")
                upload_constant(ctx.device, ctx.storage, constants[key], data, v.dtype, what)
                # A planned constant (mem_obj_id >= 0) is state written in place, e.g. a KV
                # cache (state.py): constant_key gives each one its own buffer.
                if (v.mem_obj_id >= 0 or vid in in_place) and ctx.state is not None:
                    initial = None if all_zero(data) else ctx.storage.to_storage(
                        data, v.dtype, what, UnsupportedError)
                    ctx.state.add(constants[key], ctx.bind_size(vid), initial,
                                  f"{ctx.label} value {vid}")
            buf = constants[key]
        elif v.mem_obj_id >= 0 and vid not in dedicated:
            buf = pool_buffers[v.mem_obj_id]
        else:
            buf = ctx.resources.buffer(ctx.bind_size(vid), f"{ctx.label} value {vid}")
        ctx.buffers[vid] = buf


# ops that write an operand in place: op name -> argument positions (llama's KV caches)
IN_PLACE_ARGS = {"update_cache.default": (1,), "sdpa_with_kv_cache.default": (3, 4)}


def written_in_place(graph) -> set[int]:
    """Values some op of ``graph`` writes in place (update_cache's cache), and the
    constants et_vk.prepack aliases into them (ops/view.py): two equal zero caches would
    otherwise share one constant's buffer."""
    out = {op.args[i] for op in graph.ops for i in IN_PLACE_ARGS.get(op.name, ())
           if i < len(op.args)}
    out |= {op.args[0] for op in graph.ops
            if op.name == "et_vk.prepack.default" and op.args and op.args[-1] in out}
    return out


def constant_key(ref, tensor: TensorValue, vid: int, in_place=frozenset()) -> tuple:
    """Tensors with equal keys share one buffer: read-only constants of the same named
    data or inline offset, dtype and element count. A memory-planned constant
    (``mem_obj_id >= 0``) or one an op writes in place (``in_place``: ExecuTorch leaves
    update_cache's caches unplanned, and equal zero caches share their named data) is
    state, so its own."""
    if tensor.mem_obj_id >= 0 or vid in in_place:
        return ("value", vid),
    source = ("named", ref.named_key) if ref.offset is None else ("inline", ref.offset)
    return source, tensor.dtype, tensor.numel


def upload(device, buf: Buffer, data, offset: int = 0) -> None:
    if len(data) % 4:  # queue writes must be multiples of 4 bytes
        data = bytes(data) + bytes(-len(data) % 4)
    if len(data):
        device.write_buffer(buf, data, offset)


UPLOAD_STEP_ELEMENTS = 1 << 20  # elements converted per write: bounds the host copies


def upload_constant(device, storage: Storage, buf: Buffer, data, dtype, what: str,
                    offset: int = 0) -> None:
    """Upload a constant's host bytes ``data`` (a view of the program file) in the storage
    dtype, at byte ``offset`` of ``buf``. Held as is, it is written straight from the
    file's memory; converted (float16 widened to float32, int64 narrowed, bool widened), a
    slice at a time, so a large tensor never exists twice in host memory (in a browser,
    the wasm heap)."""
    if storage.dtype(dtype) is dtype:
        upload(device, buf, data, offset)
        return
    view = memoryview(data).cast("B")
    if dtype is FLOAT16 and device.write_f16_as_f32(buf, view, offset):
        return
    step = UPLOAD_STEP_ELEMENTS * dtype.itemsize
    for start in range(0, len(view), step):
        part = storage.to_storage(view[start:start + step], dtype, what, UnsupportedError)
        upload(device, buf, part, offset)
        offset += len(part)


def _used(graph: Graph) -> set[int]:
    """Value ids some op names (value lists expanded), plus the graph's I/O."""
    out = set(graph.input_ids) | set(graph.output_ids)
    for op in graph.ops:
        out |= _expand(graph, op.args)
    return out


def _outputs_aliasing_inputs(graph: Graph) -> set[int]:
    """Op outputs (each tensor of a ValueList result too) whose mem_obj_id matches one
    of the same op's inputs or an earlier output of the same op. Not a reshape's: it
    holds its input's bytes (``BuildContext.view`` shares the buffer, or copies into one
    of its own)."""
    out = set()
    for op in graph.ops:
        if not op.args or op.name in fusion.VIEWS:
            continue
        taken = {graph.values[a].mem_obj_id for a in _operands(graph, op)
                 if isinstance(graph.values[a], TensorValue)}
        for vid in sorted(_results(graph, op)):
            result = graph.values[vid]
            if not isinstance(result, TensorValue) or result.mem_obj_id < 0:
                continue
            if result.mem_obj_id in taken:
                out.add(vid)
            taken.add(result.mem_obj_id)
    return out
