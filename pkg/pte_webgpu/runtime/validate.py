"""Checks a parsed program must pass before anything is allocated on the GPU.

formats/ checks that every id and offset stays inside its file; this checks what
a program asks the runtime to do: no op or call whose output is also its input,
no move onto itself, a value used as it is (a constant is never written, one graph
value is bound to one plan value), tensors of a rank and size a buffer can hold,
constants as long as their tensors, and the sum of the buffers the program will
make within the adapter's limits and the Runtime's cap (budget.py).
Each check is linear in the size of the program.
"""

from __future__ import annotations

from ..errors import BudgetError, FormatError, GpuLimitError, UnsupportedError, count
from ..model.dtypes import NUMEL_CAP
from ..model.graph import ListValue, TensorValue
from ..model.plan_graph import kernel_op
from ..model.program_file import (
    VULKAN_BACKEND_ID,
    DelegateCall,
    JumpFalseCall,
    KernelCall,
    MoveCall,
    PlanTensor,
)
from .budget import max_alloc_bytes, max_ops
from .build import constant_key, written_in_place

MAX_RANK = 16  # ExecuTorch's kTensorDimensionLimit
# Int, double and bool lists are shapes, dims and small parameters; ops multiply and
# print them, so a list of 100k huge ints would cost seconds and megabyte messages.
MAX_LIST_ITEMS = 4096


def validate_program(file, device, options: dict, storage) -> None:
    """Raise a PteError naming the first thing in ``file`` the runtime must refuse."""
    cap = max_alloc_bytes(options)
    op_cap = max_ops(options)
    binding = BufferLimit.of(device)
    total = ops = 0
    for plan in file.plans:
        where = f"plan {plan.name!r}"
        ops += _ops_built(plan)
        if ops > op_cap:
            raise BudgetError(f"the program builds {count(ops)} ops (at {where}; every "
                              f"delegate call builds its graph again); the cap is "
                              f"{count(op_cap)} (Runtime option max_ops)")
        _check_values(plan, where)
        _check_graphs(plan, where)
        _check_calls(plan, where)
        total += _planned_bytes(plan, file, storage, binding, where)
        if total > cap:
            raise BudgetError(f"the program's buffers need at least {count(total)} bytes (at "
                              f"{where}); the cap is {count(cap)} (Runtime option "
                              "max_alloc_bytes)")


def _ops_built(plan) -> int:
    """Ops a load builds for ``plan``: each delegate call its graph's, each kernel one."""
    n = 0
    for ins in plan.instructions:
        if isinstance(ins, DelegateCall):
            delegate = plan.delegates[ins.delegate_index]
            graph = delegate.graph.graph if delegate.graph is not None else None
            n += len(graph.ops) if graph is not None else 1
        else:
            n += 1
    return n


class BufferLimit:
    """The most bytes one tensor's buffer may have on this device: every tensor is one
    buffer bound whole, so the smaller of ``maxStorageBufferBindingSize`` and
    ``maxBufferSize`` (as the device was created: with the adapter's own limits)."""

    def __init__(self, size: int, name: str, adapter: str):
        self.size, self.name, self.adapter = size, name, adapter

    @classmethod
    def of(cls, device) -> "BufferLimit":
        binding = device.limit("maxStorageBufferBindingSize", 1 << 27)
        whole = device.limit("maxBufferSize", binding)
        info = getattr(device, "info", None)
        adapter = info.summary() if info is not None else "this adapter"
        if binding <= whole:
            return cls(binding, "maxStorageBufferBindingSize", adapter)
        return cls(whole, "maxBufferSize", adapter)

    def fits(self, size: int) -> bool:
        return size <= self.size

    def error(self, what: str, size: int) -> GpuLimitError:
        return GpuLimitError(
            f"{what} needs {count(size)} bytes ({size / 2**20:.1f} MiB); the adapter's "
            f"{self.name} is {count(self.size)} bytes ({self.size / 2**20:.1f} MiB) on "
            f"{self.adapter}, so it cannot be loaded here (a smaller model, or a GPU or "
            "browser with higher limits, may fit)")


def _tensor_size(t, storage, binding: BufferLimit, what: str) -> int:
    """GPU bytes of a tensor, refused beyond a rank of MAX_RANK or the buffer limit."""
    shape = t.sizes if isinstance(t, PlanTensor) else t.shape
    if len(shape) > MAX_RANK:
        raise UnsupportedError(f"{what} has {len(shape)} dimensions; at most {MAX_RANK} are "
                               "supported")
    if t.dtype is None:
        return 4  # refused where it is used (the op or call names the dtype)
    if t.numel >= NUMEL_CAP:
        raise GpuLimitError(f"{what} {t.dtype.name}{_dims(shape)} has {count(t.numel)} "
                            "elements; no GPU buffer holds that many")
    size = storage.nbytes(t)
    if not binding.fits(size):
        raise binding.error(f"{what} {t.dtype.name}{_dims(shape)}", size)
    return size


def _dims(shape) -> str:
    return str(list(shape)) if len(shape) <= 8 else f"[{len(shape)} dims]"


# --- the plan's values and calls ------------------------------------------------------
def _check_values(plan, where: str) -> None:
    n = len(plan.values)
    for vid, v in enumerate(plan.values):
        if isinstance(v, ListValue) and v.kind in ("tensor_list", "optional_tensor_list"):
            low = -1 if v.kind == "optional_tensor_list" else 0
            for i, item in enumerate(v.items):
                if not low <= item < n:
                    raise FormatError(f"{v.kind} item {item} is out of range (the plan has "
                                      f"{n} values)", field=f"{where} value {vid} items[{i}]")
    seen = set()
    for i, vid in enumerate(plan.inputs):
        if vid in seen:
            raise FormatError(f"value {vid} is listed twice as an input; each input needs a "
                              "value of its own", field=f"{where} inputs[{i}]")
        seen.add(vid)


def _check_calls(plan, where: str) -> None:
    values = plan.values
    for index, ins in enumerate(plan.instructions):
        w = f"{where} instruction {index}"
        if isinstance(ins, MoveCall):
            if ins.move_from == ins.move_to:
                raise FormatError(f"moves value {ins.move_from} onto itself", field=w)
            src, dst = values[ins.move_from], values[ins.move_to]
            if isinstance(src, PlanTensor) and isinstance(dst, PlanTensor) and \
                    (src.dtype != dst.dtype or src.numel != dst.numel):
                raise FormatError(f"moves value {ins.move_from} ({_name(src)}) into value "
                                  f"{ins.move_to} ({_name(dst)}): they differ in dtype or "
                                  "size", field=w)
        elif isinstance(ins, KernelCall):
            op = kernel_op(plan, ins)
            out = op.args[-1] if op.args else None
            in_place = plan.operators[ins.op_index][0].endswith("_")  # aten::copy_: self
            if not in_place and out is not None and isinstance(values[out], PlanTensor) and \
                    out in op.args[:-1]:
                raise FormatError(f"{op.name} writes value {out}, which it also reads; an "
                                  "op's output must be a value of its own", field=w)
        elif isinstance(ins, DelegateCall):
            _check_delegate_args(plan, ins, w)
        elif isinstance(ins, JumpFalseCall):
            cond = values[ins.cond_value_index]
            if cond.kind not in ("bool", "tensor"):
                raise FormatError(f"jumps on value {ins.cond_value_index}, a {cond.kind}; a "
                                  "condition is a bool", field=w)


def _name(t: PlanTensor) -> str:
    return f"{t.dtype.name if t.dtype else t.scalar_type}{_dims(t.sizes)}"


def _check_delegate_args(plan, call: DelegateCall, w: str) -> None:
    delegate = plan.delegates[call.delegate_index]
    if delegate.id != VULKAN_BACKEND_ID or delegate.graph is None:
        return  # refused when the call is built
    graph = delegate.graph.graph
    gids = graph.input_ids + graph.output_ids
    if len(call.args) != len(gids):
        return  # refused when the call is built, with the arity
    bound: dict[int, int] = {}  # graph value -> plan value
    written: dict[int, int] = {}  # plan value -> graph output bound to it
    n_in = len(graph.input_ids)
    for k, (gid, pid) in enumerate(zip(gids, call.args)):
        if bound.setdefault(gid, pid) != pid:
            raise FormatError(f"graph value {gid} is bound to plan values {bound[gid]} and "
                              f"{pid}", field=w)
        if k >= n_in:
            if pid in written and written[pid] != gid:
                raise FormatError(f"graph outputs {written[pid]} and {gid} are both bound to "
                                  f"plan value {pid}", field=w)
            written[pid] = gid
    for gid, pid in zip(graph.input_ids, call.args):
        if pid in written and written[pid] != gid:
            raise FormatError(f"plan value {pid} is both input (graph value {gid}) and output "
                              f"(graph value {written[pid]}) of the delegate; an output must "
                              "be a value of its own", field=w)


# --- the delegate graphs ---------------------------------------------------------------
def _check_graphs(plan, where: str) -> None:
    for d, delegate in enumerate(plan.delegates):
        if delegate.id == VULKAN_BACKEND_ID and delegate.graph is not None:
            _check_graph(delegate.graph.graph, f"{where} delegate {d}")


def _check_graph(graph, where: str) -> None:
    values = graph.values
    for i, v in enumerate(values):
        if isinstance(v, ListValue) and v.kind != "value_list" and \
                len(v.items) > MAX_LIST_ITEMS:
            raise UnsupportedError(f"{v.kind} of {len(v.items)} items; at most "
                                   f"{MAX_LIST_ITEMS} are supported ({where} value {i})")
        if isinstance(v, ListValue) and v.kind == "value_list":
            for item in v.items:
                if isinstance(values[item], ListValue) and values[item].kind == "value_list":
                    raise FormatError(f"value list {i} holds value list {item}; lists do not "
                                      "nest", field=f"{where} value {i}")
    for name, ids in (("input_ids", graph.input_ids), ("output_ids", graph.output_ids)):
        if len(set(ids)) != len(ids):
            raise FormatError(f"{name} {_short(ids)} list a value twice", field=f"{where}")
    for i, op in enumerate(graph.ops):
        if not op.args:
            continue
        results = _expand(values, op.args[-1:])
        operands = _expand(values, op.args[:-1])
        w = f"{where} op {i} ({op.name})"
        both = results & operands
        if both:
            raise FormatError(f"writes value {min(both)}, which it also reads; an op's output "
                              "must be a value of its own", field=w)
        for vid in results:
            v = values[vid]
            if isinstance(v, TensorValue) and v.constant_id >= 0 and v.mem_obj_id < 0:
                raise FormatError(f"writes value {vid}, a read-only constant (constants "
                                  "without a memory object are shared)", field=w)


def _expand(values, ids) -> set[int]:
    out = set()
    for vid in ids:
        v = values[vid]
        if isinstance(v, ListValue) and v.kind == "value_list":
            out.update(v.items)
        else:
            out.add(vid)
    return out


def _short(ids) -> str:
    return str(list(ids)) if len(ids) <= 8 else f"[{len(ids)} ids]"


# --- what the program will allocate ----------------------------------------------------
def _planned_bytes(plan, file, storage, binding: BufferLimit, where: str) -> int:
    """A lower bound of the bytes build.py and method.py will allocate for ``plan``:
    its plan tensors, its delegates' constants (once each), memory pools and other
    tensors, and the output staging buffer. Constants are length-checked on the way."""
    values = plan.values
    touched: set[int] = set(plan.inputs) | set(plan.outputs)
    delegate_bytes = 0
    for index, ins in enumerate(plan.instructions):
        if isinstance(ins, (KernelCall, DelegateCall)):
            touched.update(a for a in ins.args if isinstance(values[a], PlanTensor))
        elif isinstance(ins, MoveCall):
            touched.update((ins.move_from, ins.move_to))
        if isinstance(ins, DelegateCall):
            delegate = plan.delegates[ins.delegate_index]
            if delegate.id == VULKAN_BACKEND_ID and delegate.graph is not None:
                delegate_bytes += _delegate_bytes(delegate.graph, file, storage, binding,
                                                  f"{where} instruction {index}")
    total = delegate_bytes
    for vid in touched:
        t = values[vid]
        if not isinstance(t, PlanTensor):
            continue
        size = _tensor_size(t, storage, binding, f"{where} value {vid}")
        total += size + (size if vid in plan.outputs else 0)  # outputs: also staged
        if t.dtype is not None and (t.data_buffer_idx > 0 or t.external):
            file.plan_constant_bytes(t, f"{where} constant value {vid}")
    return total


def _constant_name(graph, v) -> str:
    """ " (constant 3, named data 'ab12…')" for a constant tensor: how a user finds it."""
    if v.constant_id < 0 or v.constant_id >= len(graph.constants):
        return ""
    ref = graph.constants[v.constant_id]
    key = ref.named_key
    if key is None:
        return f" (constant {ref.index}, inline)"
    return f" (constant {ref.index}, named data {key[:24] + ('…' if len(key) > 24 else '')!r})"


def _delegate_bytes(vk, file, storage, binding: BufferLimit, where: str) -> int:
    from .. import formats

    graph = vk.graph
    io = set(graph.input_ids) | set(graph.output_ids)
    pools: dict[int, int] = {}
    constants: dict[tuple, int] = {}
    in_place = written_in_place(graph)
    total = 0
    for vid, v in enumerate(graph.values):
        if not isinstance(v, TensorValue) or vid in io:
            continue
        size = _tensor_size(v, storage, binding, f"{where} graph value {vid}"
                            + _constant_name(graph, v))
        if v.constant_id >= 0:
            key = constant_key(graph.constants[v.constant_id], v, vid, in_place)
            if key not in constants:
                constants[key] = size
                formats.resolve(graph.constants[v.constant_id], v.nbytes, file.named,
                                vk.constant_bytes)  # DataTooSmallError / MissingDataError
        elif v.mem_obj_id >= 0:
            pools[v.mem_obj_id] = max(pools.get(v.mem_obj_id, 0), size)
        else:
            total += size
    return total + sum(constants.values()) + sum(pools.values())
