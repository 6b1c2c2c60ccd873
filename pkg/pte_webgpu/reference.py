"""A CPU reference interpreter of Vulkan delegate graphs, in pure Python (no numpy).

It runs a program's plan (Vulkan delegate calls only) op by op, computing in
float64 and rounding every op output to its tensor's dtype through ``struct``,
so GPU results can be checked anywhere, including an offline Pyodide. Slow by
design: it is for checking, not for speed.
"""

from __future__ import annotations

import math
import struct

from . import dtypes, formats
from .errors import FormatError, UnsupportedError
from .formats.pte import DelegateCall
from .graph import Scalar, TensorValue
from .runtime.tensor import Tensor

F32_EPS = 2.0 ** -23  # PyTorch's rms_norm eps when none is given (float32 machine epsilon)
FLOAT_DTYPES = ("float16", "float32", "float64")


class Array:
    """A flat list of Python floats with a shape (C order)."""

    __slots__ = ("shape", "values")

    def __init__(self, shape, values: list):
        self.shape, self.values = tuple(shape), values


def round_to(values: list, dtype: dtypes.DType) -> list:
    """``values`` rounded to ``dtype`` (out-of-range values become +-inf, as on a GPU)."""
    if dtype.name == "float64":
        return list(values)
    code = f"<{len(values)}{dtype.struct_code}"
    try:
        return list(struct.unpack(code, struct.pack(code, *values)))
    except OverflowError:  # struct refuses finite values beyond the type's range
        return [_round_one(v, dtype.struct_code) for v in values]


def _round_one(v: float, code: str) -> float:
    try:
        return struct.unpack("<" + code, struct.pack("<" + code, v))[0]
    except OverflowError:
        return math.copysign(math.inf, v)


def from_tensor(t) -> Array:
    """An Array from a runtime.Tensor or a numpy array (anything with shape/dtype/tobytes)."""
    dtype = _float_dtype(getattr(t.dtype, "name", str(t.dtype)), "input")
    shape = tuple(int(d) for d in t.shape)
    return Array(shape, list(struct.unpack(f"<{dtypes.numel(shape)}{dtype.struct_code}",
                                           t.tobytes())))


def to_tensor(a: Array, dtype: dtypes.DType) -> Tensor:
    return Tensor(struct.pack(f"<{len(a.values)}{dtype.struct_code}", *a.values), a.shape, dtype)


def _float_dtype(name: str, what: str) -> dtypes.DType:
    if name not in FLOAT_DTYPES:
        raise UnsupportedError(f"the CPU reference computes float tensors only; {what} is {name}")
    return dtypes.BY_NAME[name]


# --- ops ---------------------------------------------------------------------------

def broadcast_index_map(shape: tuple, out_shape: tuple) -> list[int]:
    """For each output element (C order), the flat index of the ``shape`` element it reads."""
    if len(shape) > len(out_shape):
        raise FormatError(f"shape {list(shape)} does not broadcast to {list(out_shape)}")
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    index = [0]
    for size, out_size in zip(padded, out_shape):
        if size not in (1, out_size):
            raise FormatError(f"shape {list(shape)} does not broadcast to {list(out_shape)}")
        # One more dimension: each existing index fans out over this dimension.
        index = [i * size + (j if size != 1 else 0) for i in index for j in range(out_size)]
    return index


def add(a: Array, b: Array, alpha: float, out_shape: tuple) -> list:
    ai, bi = broadcast_index_map(a.shape, out_shape), broadcast_index_map(b.shape, out_shape)
    av, bv = a.values, b.values
    return [av[i] + alpha * bv[j] for i, j in zip(ai, bi)]


def rms_norm(x: Array, weight: Array, eps: float) -> list:
    width = x.shape[-1] if x.shape else 1
    if len(weight.values) < width:
        raise FormatError(f"rms_norm: weight has {len(weight.values)} elements, "
                          f"the row width is {width}")
    w, out = weight.values, []
    for start in range(0, len(x.values), width):
        row = x.values[start:start + width]
        scale = 1.0 / math.sqrt(math.fsum(v * v for v in row) / width + eps)
        out += [v * scale * w[k] for k, v in enumerate(row)]
    return out


def _scalar(value, default: float) -> float:
    if isinstance(value, Scalar) and value.kind in ("int", "double"):
        return float(value.value)
    return default


def _op_add(read, values, args):
    a_id, b_id, alpha_id, out_id = args
    return add(read(a_id), read(b_id), _scalar(values[alpha_id], 1.0), values[out_id].shape)


def _op_rms_norm(read, values, args):
    x_id, w_id, eps_id, _ = args
    return rms_norm(read(x_id), read(w_id), _scalar(values[eps_id], F32_EPS))


# name -> (argument count, function(read, values, args) -> flat output values)
OPS = {"aten.add.Tensor": (4, _op_add), "et_vk.rms_norm.default": (4, _op_rms_norm)}


def supported_ops() -> list[str]:
    return sorted(OPS)


# --- graphs and plans ----------------------------------------------------------------

def run_delegate(vk: formats.VulkanDelegate, named: formats.NamedData,
                 inputs: list[Array], label: str = "delegate") -> list[Array]:
    """Run one Vulkan delegate graph; ``inputs`` in ``graph.input_ids`` order."""
    graph = vk.graph
    values = graph.values
    arrays: dict[int, Array] = {}
    for gid, a in zip(graph.input_ids, inputs):
        t = graph.tensor(gid)
        if len(a.values) != t.numel:
            raise FormatError(f"{label}: input value {gid} holds {t.numel} elements, "
                              f"got {len(a.values)}")
        arrays[gid] = Array(t.shape, round_to(a.values, _float_dtype(t.dtype.name, f"value {gid}")))

    def read(vid: int) -> Array:
        if vid in arrays:
            return arrays[vid]
        t = values[vid]
        if not isinstance(t, TensorValue):
            raise FormatError(f"{label}: value {vid} should be a tensor, found {t.kind}")
        if not t.is_constant:
            raise FormatError(f"{label}: value {vid} is read before any op writes it")
        dtype = _float_dtype(t.dtype.name, f"constant value {vid}")
        data = formats.resolve(graph.constants[t.constant_id], t.nbytes, named,
                               vk.constant_bytes).data
        arrays[vid] = Array(t.shape, list(struct.unpack(f"<{t.numel}{dtype.struct_code}", data)))
        return arrays[vid]

    for i, op in enumerate(graph.ops):
        if op.name not in OPS:
            raise UnsupportedError(f"op {op.name!r} ({label} op {i}) has no CPU reference; "
                                   f"the reference computes: {', '.join(supported_ops())}")
        count, fn = OPS[op.name]
        if len(op.args) != count:
            raise FormatError(f"{op.name} takes {count} arguments, found {len(op.args)}",
                              field=f"{label} op {i}")
        out = values[op.args[-1]]
        if not isinstance(out, TensorValue):
            raise FormatError(f"{label} op {i} {op.name}: output value {op.args[-1]} is a "
                              f"{out.kind}, not a tensor")
        result = fn(read, values, op.args)
        if len(result) != out.numel:
            raise FormatError(f"{label} op {i} {op.name}: computed {len(result)} elements, the "
                              f"output tensor {list(out.shape)} holds {out.numel}")
        arrays[op.args[-1]] = Array(out.shape, round_to(result, out.dtype))
    return [read(gid) for gid in graph.output_ids]


def run_program(program: formats.ProgramFile, inputs: list, method: str = "forward") -> list:
    """Run ``method`` of an opened program (formats.open_program) on the CPU.

    ``inputs``: one Tensor or numpy array per plan input. Returns one
    runtime.Tensor per plan output, in the plan's dtypes.
    """
    plan = program.plan(method)
    if len(inputs) != len(plan.inputs):
        raise UnsupportedError(f"method {method!r} takes {len(plan.inputs)} inputs, "
                               f"got {len(inputs)}")
    env = {vid: from_tensor(t) for vid, t in zip(plan.inputs, inputs)}
    for i, ins in enumerate(plan.instructions):
        if not isinstance(ins, DelegateCall):
            raise UnsupportedError(f"instruction {i} of {method!r} is a {ins.kind} call; the "
                                   "CPU reference runs Vulkan delegate calls only")
        delegate = plan.delegates[ins.delegate_index]
        if delegate.graph is None:
            raise UnsupportedError(f"instruction {i}: backend {delegate.id!r} has no CPU "
                                   f"reference (only {formats.VULKAN_BACKEND_ID})")
        graph = delegate.graph.graph
        n_in = len(graph.input_ids)
        if len(ins.args) != n_in + len(graph.output_ids):
            raise FormatError(f"instruction {i}: {len(ins.args)} arguments for a graph with "
                              f"{n_in} inputs and {len(graph.output_ids)} outputs")
        missing = [pid for pid in ins.args[:n_in] if pid not in env]
        if missing:
            raise FormatError(f"instruction {i}: plan values {missing} are read before written")
        outs = run_delegate(delegate.graph, program.named, [env[p] for p in ins.args[:n_in]],
                            f"instruction {i} delegate {ins.delegate_index}")
        for pid, a in zip(ins.args[n_in:], outs):
            shape = tuple(plan.values[pid].sizes)  # the plan's shape, same element count
            env[pid] = Array(shape, a.values)
    results = []
    for vid in plan.outputs:
        if vid not in env:
            raise FormatError(f"plan output value {vid} is never written")
        t = plan.values[vid]
        dtype = _float_dtype(t.dtype.name if t.dtype else "unknown", f"output value {vid}")
        results.append(to_tensor(Array(env[vid].shape, round_to(env[vid].values, dtype)), dtype))
    return results
