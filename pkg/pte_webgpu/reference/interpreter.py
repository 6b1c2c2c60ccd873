"""A CPU reference interpreter of programs, in pure Python (no numpy).

It runs a program's plan (Vulkan delegate calls, non-delegated kernels, moves)
op by op, computing in float64 and rounding every op output to its tensor's
dtype through ``struct``, so GPU results can be checked anywhere, including an
offline Pyodide. Each op's reference function comes from its one definition in
the op registry (ops/registry.py). Slow by design: it is for checking, not for speed.
"""

from __future__ import annotations

import struct

from .. import formats
from ..errors import FormatError, UnsupportedError
from ..model import dtypes, f32
from ..model.graph import ListValue, Scalar, TensorValue
from ..model.plan_graph import delegate_of, kernel_op, linear_chain, plan_as_graph
from ..model.program_file import DelegateCall, FreeCall, KernelCall, MoveCall, PlanTensor
from ..model.tensor import Tensor
from ..ops import registry
from ..ops.cpu_reference import Array
from ..runtime.inputs import read_input

__all__ = ["Array", "from_tensor", "round_to", "run_delegate", "run_op", "run_op_outputs",
           "run_program", "supported_ops", "to_tensor"]

FLOAT_DTYPES = ("float16", "float32", "float64")
INT_DTYPES = ("int32", "int64")  # e.g. token ids (embedding indices)
PACKED_DTYPES = ("uint8", "int8")  # quantized weights (read as they are stored)


def round_to(values: list, dtype: dtypes.DType) -> list:
    """``values`` rounded to ``dtype`` (out-of-range values become +-inf, as on a GPU)."""
    if dtype.name == "float64":
        return list(values)
    if dtype.name in INT_DTYPES + PACKED_DTYPES:
        return [int(v) for v in values]
    if dtype.name == "bool":  # masks (ops/mixed.py): held as 0 / 1
        return [int(bool(v)) for v in values]
    return list(struct.unpack(f"<{len(values)}{dtype.struct_code}",
                              f32.pack(f"<{len(values)}{dtype.struct_code}", *values)))


def from_tensor(t) -> Array:
    """An Array from a Tensor or a numpy array (any byte order or strides)."""
    t = read_input(t, 0)
    dtype = _dtype(getattr(t.dtype, "name", str(t.dtype)), "input")
    shape = tuple(int(d) for d in t.shape)
    return Array(shape, list(struct.unpack(f"<{dtypes.numel(shape)}{dtype.struct_code}",
                                           t.tobytes())))


def to_tensor(a: Array, dtype: dtypes.DType) -> Tensor:
    return Tensor(f32.pack(f"<{len(a.values)}{dtype.struct_code}", *a.values), a.shape, dtype)


def _dtype(name: str, what: str) -> dtypes.DType:
    if name not in FLOAT_DTYPES + INT_DTYPES + PACKED_DTYPES + ("bool",):
        raise UnsupportedError(f"the CPU reference computes float, int32 and int64 tensors "
                               f"(and bool masks, uint8/int8 packed weights) only; {what} is {name}")
    return dtypes.BY_NAME[name]


def supported_ops() -> list[str]:
    return registry.reference_ops()


# --- graphs and plans ----------------------------------------------------------------

def _unpack(t: TensorValue, data, what: str) -> Array:
    dtype = _dtype(getattr(t.dtype, "name", "unknown"), what)
    return Array(t.shape, list(struct.unpack(f"<{t.numel}{dtype.struct_code}",
                                             bytes(data[:t.numel * dtype.itemsize]))))


def _reader(arrays: dict, values: list, constant, label: str):
    """read(vid) -> Array: a computed value, else ``constant(vid, tensor)`` bytes."""
    def read(vid: int) -> Array:
        if vid not in arrays:
            t = values[vid]
            if not isinstance(t, TensorValue):
                raise FormatError(f"{label}: value {vid} should be a tensor, found {t.kind}")
            data = constant(vid, t)
            if data is None:
                raise FormatError(f"{label}: value {vid} is read before any op writes it")
            arrays[vid] = _unpack(t, data, f"constant value {vid}")
        return arrays[vid]
    return read


def run_op(op, values: list, read, label: str) -> Array:
    """One op: its output Array, rounded to the output tensor's dtype (the first output
    of an op whose output is a ValueList)."""
    return next(iter(run_op_outputs(op, values, read, label).values()))


def run_op_outputs(op, values: list, read, label: str) -> dict[int, Array]:
    """One op: {value id: Array} for its output tensor, or for each tensor of its output
    ValueList (multi-output ops such as native_layer_norm return one list per tensor)."""
    d = registry.find(op.name)
    if d is None or d.reference is None:
        raise UnsupportedError(f"op {op.name!r} ({label}) has no CPU reference; "
                               f"the reference computes: {', '.join(supported_ops())}")
    count, fn = d.args, d.reference
    if count is not None and len(op.args) != count:
        raise FormatError(f"{op.name} takes {count} arguments, found {len(op.args)}", field=label)
    last = values[op.args[-1]]
    if isinstance(last, Scalar) and last.kind == "symint":  # an integer op (ops/symint.py)
        return {op.args[-1]: fn(read, values, op.args)}
    multi = isinstance(last, ListValue) and last.kind == "value_list"
    ids = list(last.items) if multi else [op.args[-1]]
    for vid in ids:
        if not isinstance(values[vid], TensorValue):
            raise FormatError(f"{label} {op.name}: output value {vid} is a "
                              f"{values[vid].kind}, not a tensor")
    result = fn(read, values, op.args)
    results = result if multi else [result]
    if len(results) != len(ids):
        raise FormatError(f"{label} {op.name}: computed {len(results)} outputs, the output "
                          f"list holds {len(ids)}")
    arrays = {}
    for vid, flat in zip(ids, results):
        out = values[vid]
        if len(flat) != out.numel:
            raise FormatError(f"{label} {op.name}: computed {len(flat)} elements, the output "
                              f"tensor {list(out.shape)} holds {out.numel}")
        arrays[vid] = Array(out.shape, round_to(flat, _dtype(out.dtype.name, "output")))
    return arrays


def run_delegate(vk: formats.VulkanDelegate, named: formats.NamedData,
                 inputs: list[Array], label: str = "delegate") -> list[Array]:
    """Run one Vulkan delegate graph; ``inputs`` in ``graph.input_ids`` order."""
    graph = vk.graph
    arrays: dict[int, Array] = {}
    for gid, a in zip(graph.input_ids, inputs):
        t = graph.tensor(gid)
        if len(a.values) != t.numel:
            raise FormatError(f"{label}: input value {gid} holds {t.numel} elements, "
                              f"got {len(a.values)}")
        arrays[gid] = Array(t.shape, round_to(a.values, _dtype(t.dtype.name, f"value {gid}")))

    def constant(vid, t):
        if not t.is_constant:
            return None
        return formats.resolve(graph.constants[t.constant_id], t.nbytes, named,
                               vk.constant_bytes).data

    read = _reader(arrays, graph.values, constant, label)
    for i, op in enumerate(graph.ops):
        arrays.update(run_op_outputs(op, graph.values, read, f"{label} op {i}"))
    return [read(gid) for gid in graph.output_ids]


def _delegate_call(program, plan, i: int, ins: DelegateCall, read, env: dict) -> None:
    vk = delegate_of(plan, i, ins)
    n_in = len(vk.graph.input_ids)
    outs = run_delegate(vk, program.named, [read(p) for p in ins.args[:n_in]],
                        f"instruction {i} delegate {ins.delegate_index}")
    for pid, a in zip(ins.args[n_in:], outs):
        env[pid] = Array(tuple(plan.values[pid].sizes), a.values)  # the plan's shape


def run_program(program: formats.ProgramFile, inputs: list, method: str = "forward") -> list:
    """Run ``method`` of an opened program (formats.open_program) on the CPU.

    ``inputs``: one Tensor or numpy array per plan input. Returns one
    Tensor per plan output, in the plan's dtypes.
    """
    plan = program.plan(method)
    if len(inputs) != len(plan.inputs):
        raise UnsupportedError(f"method {method!r} takes {len(plan.inputs)} inputs, "
                               f"got {len(inputs)}")
    values = plan_as_graph(plan).values  # plan tensors as TensorValue, for the op functions

    def constant(vid, _t):
        t = plan.values[vid]
        if t.external:
            return program.named.lookup(t.fully_qualified_name)[0]
        if t.data_buffer_idx > 0:
            return program.constant_tensor_bytes(t, t.numel * t.dtype.itemsize, f"value {vid}")
        return None

    env = {vid: from_tensor(t) for vid, t in zip(plan.inputs, inputs)}
    read = _reader(env, values, constant, f"method {method!r}")
    for i, ins in linear_chain(plan):
        if isinstance(ins, DelegateCall):
            _delegate_call(program, plan, i, ins, read, env)
        elif isinstance(ins, KernelCall):
            op = kernel_op(plan, ins)
            env.update(run_op_outputs(op, values, read, f"instruction {i} kernel"))
        elif isinstance(ins, MoveCall):
            env[ins.move_to] = read(ins.move_from)
        elif not isinstance(ins, FreeCall):
            raise UnsupportedError(f"instruction {i} is a {ins.kind} call, which the CPU "
                                   "reference does not run")
    results = []
    for vid in plan.outputs:
        t = plan.values[vid]
        if not isinstance(t, PlanTensor):
            raise UnsupportedError(f"plan output value {vid} is a {t.kind}, not a tensor")
        dtype = _dtype(t.dtype.name if t.dtype else "unknown", f"output value {vid}")
        a = read(vid)
        results.append(to_tensor(Array(a.shape, round_to(a.values, dtype)), dtype))
    return results
