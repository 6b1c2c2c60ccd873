"""A CPU reference interpreter of programs, in pure Python (no numpy).

It runs a program's plan (Vulkan delegate calls, non-delegated kernels, moves)
op by op, computing in float64 and rounding every op output to its tensor's
dtype through ``struct``, so GPU results can be checked anywhere, including an
offline Pyodide. Every op the GPU registry builds has a function here. Slow by
design: it is for checking, not for speed.
"""

from __future__ import annotations

import math
import operator
import struct

from . import dtypes, f32, formats
from .errors import FormatError, InputError, UnsupportedError
from .formats.pte import DelegateCall, FreeCall, KernelCall, MoveCall, PlanTensor
from .graph import ListValue, Null, Scalar, TensorValue
from .runtime.plan_graph import delegate_of, kernel_op, linear_chain, plan_as_graph
from .runtime.inputs import read_input
from .runtime.tensor import Tensor

F32_EPS = 2.0 ** -23  # PyTorch's rms_norm eps when none is given (float32 machine epsilon)
FLOAT_DTYPES = ("float16", "float32", "float64")
INT_DTYPES = ("int32", "int64")  # e.g. token ids (embedding indices)


class Array:
    """A flat list of Python floats (ints for integer tensors) with a shape (C order)."""

    __slots__ = ("shape", "values")

    def __init__(self, shape, values: list):
        self.shape, self.values = tuple(shape), values


def round_to(values: list, dtype: dtypes.DType) -> list:
    """``values`` rounded to ``dtype`` (out-of-range values become +-inf, as on a GPU)."""
    if dtype.name == "float64":
        return list(values)
    if dtype.name in INT_DTYPES:
        return [int(v) for v in values]
    return list(struct.unpack(f"<{len(values)}{dtype.struct_code}",
                              f32.pack(f"<{len(values)}{dtype.struct_code}", *values)))


def from_tensor(t) -> Array:
    """An Array from a runtime.Tensor or a numpy array (any byte order or strides)."""
    t = read_input(t, 0)
    dtype = _dtype(getattr(t.dtype, "name", str(t.dtype)), "input")
    shape = tuple(int(d) for d in t.shape)
    return Array(shape, list(struct.unpack(f"<{dtypes.numel(shape)}{dtype.struct_code}",
                                           t.tobytes())))


def to_tensor(a: Array, dtype: dtypes.DType) -> Tensor:
    return Tensor(f32.pack(f"<{len(a.values)}{dtype.struct_code}", *a.values), a.shape, dtype)


def _dtype(name: str, what: str) -> dtypes.DType:
    if name not in FLOAT_DTYPES + INT_DTYPES:
        raise UnsupportedError(f"the CPU reference computes float, int32 and int64 tensors "
                               f"only; {what} is {name}")
    return dtypes.BY_NAME[name]


# --- index maps ----------------------------------------------------------------------

def strided_index(shape, strides) -> list[int]:
    """For each element of ``shape`` (C order), ``sum(coord[d] * strides[d])``."""
    index = [0]
    for size, stride in zip(shape, strides):
        index = [i + j * stride for i in index for j in range(size)]
    return index


def contiguous_strides(shape) -> list[int]:
    strides, step = [], 1
    for size in reversed(shape):
        strides.insert(0, step)
        step *= size
    return strides


def broadcast_index_map(shape: tuple, out_shape: tuple) -> list[int]:
    """For each output element (C order), the flat index of the ``shape`` element it reads."""
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    if len(shape) > len(out_shape) or any(s not in (1, o) for s, o in zip(padded, out_shape)):
        raise FormatError(f"shape {list(shape)} does not broadcast to {list(out_shape)}")
    strides = [0 if s == 1 else t for s, t in zip(padded, contiguous_strides(padded))]
    return strided_index(out_shape, strides)


def _norm_dims(dims, rank: int) -> list[int]:
    span = max(rank, 1)
    if any(not -span <= d < span for d in dims):
        raise FormatError(f"dims {list(dims)} are out of range for rank {rank}")
    return sorted({d % span for d in dims})


def line_index(shape, dims) -> list[int]:
    """For each element of ``shape``, the flat index of its line when ``dims`` are reduced."""
    kept = [1 if d in dims else s for d, s in enumerate(shape)]
    strides = [0 if d in dims else t for d, t in enumerate(contiguous_strides(kept))]
    return strided_index(shape, strides)


def _lines(shape, dims, n: int) -> list[list[int]]:
    """Flat element positions of each line (reduced over ``dims``), in line order."""
    index = line_index(shape, dims)
    lines = [[] for _ in range(max(index, default=-1) + 1)]
    for pos, line in zip(range(n), index):
        lines[line].append(pos)
    return lines


# --- elementwise math with IEEE results where Python raises ---------------------------

def _div(x: float, y: float) -> float:
    if y:
        return x / y
    if x != x or x == 0:
        return math.nan
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


def _rsqrt(x: float) -> float:
    if x != x or x < 0:
        return math.nan
    return 1.0 / math.sqrt(x) if x else math.copysign(math.inf, x)


def _sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)  # x < 0 or NaN: exp cannot overflow
    return e / (1.0 + e)


def _odd_integer(e: float) -> bool:
    return math.isfinite(e) and e == int(e) and int(e) % 2 == 1


def _pow(x: float, e: float) -> float:
    try:
        return math.pow(x, e)
    except OverflowError:
        return math.copysign(math.inf, x) if _odd_integer(e) else math.inf
    except ValueError:  # 0 to a negative power, or a negative base to a fractional one
        if x == 0:
            return math.copysign(math.inf, x) if _odd_integer(e) else math.inf
        return math.nan


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _gelu(x: float) -> float:
    """x/2 (1 + erf(x/sqrt2)), as x/2 erfc(-x/sqrt2): -inf gives NaN (-inf * 0), as torch."""
    return 0.5 * x * math.erfc(-x / math.sqrt(2.0))


def _gelu_tanh(x: float) -> float:
    """x/2 (1 + tanh(u)), with 1 + tanh(u) = 2 / (1 + e^{-2u}): no cancellation for x < 0."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
    return x / (1.0 + _exp(-2.0 * inner))


def _relu(x: float) -> float:
    return 0.0 if x < 0 else x  # NaN and -0.0 pass through, as torch


def _sqrt(x: float) -> float:
    return math.nan if x < 0 else math.sqrt(x)


def _clamp(x: float, low: float | None, high: float | None) -> float:
    """torch.clamp: below ``low`` -> low, then above ``high`` -> high; NaN stays NaN."""
    if low is not None and x < low:
        x = low
    if high is not None and x > high:
        x = high
    return x


# --- ops: each takes (read, values, args) and returns the output's flat values ---------

def elementwise(a: Array, b: Array, out_shape: tuple, fn) -> list:
    ai, bi = broadcast_index_map(a.shape, out_shape), broadcast_index_map(b.shape, out_shape)
    av, bv = a.values, b.values
    return [fn(av[i], bv[j]) for i, j in zip(ai, bi)]


def add(a: Array, b: Array, alpha: float, out_shape: tuple) -> list:
    return elementwise(a, b, out_shape, lambda x, y: x + alpha * y)


def rms_norm(x: Array, weight: Array, eps: float) -> list:
    width = x.shape[-1] if x.shape else 1
    if len(weight.values) < width:
        raise FormatError(f"rms_norm: weight has {len(weight.values)} elements, "
                          f"the row width is {width}")
    w, out = weight.values, []
    for start in range(0, len(x.values), width):
        row = x.values[start:start + width]
        # torch sums the squares in float32 (also for float16): past its range, inf -> 0.
        squares = f32.to_f32(math.fsum(v * v for v in row))
        scale = 1.0 / math.sqrt(squares / width + eps)
        out += [v * scale * w[k] for k, v in enumerate(row)]
    return out


def _number(value, default: float | None = None) -> float:
    if isinstance(value, Scalar) and value.kind in ("int", "double"):
        return float(value.value)
    if default is None:
        raise FormatError(f"expected an Int or Double argument, found {value.kind}")
    return default


def _int_list(value) -> list[int] | None:
    if isinstance(value, ListValue) and value.kind == "int_list":
        return [int(d) for d in value.items]
    if isinstance(value, Scalar) and value.kind == "int":
        return [int(value.value)]
    if isinstance(value, Null):
        return None
    raise FormatError(f"expected an IntList argument, found {value.kind}")


def _binary(fn, has_alpha: bool):
    def op(read, values, args):
        alpha = _number(values[args[2]], 1.0) if has_alpha else 1.0
        return elementwise(read(args[0]), read(args[1]), values[args[-1]].shape,
                           lambda x, y: fn(x, alpha * y))
    return op


def _unary(fn):
    return lambda read, values, args: [fn(v) for v in read(args[0]).values]


def _op_pow(read, values, args):
    e = _number(values[args[1]])
    return [_pow(v, e) for v in read(args[0]).values]


def _op_add_scalar(read, values, args):
    shift = _number(values[args[2]], 1.0) * _number(values[args[1]])
    return [v + shift for v in read(args[0]).values]


def _op_gelu(read, values, args):
    form = values[args[1]]
    form = "none" if isinstance(form, Null) else form.value
    if form not in ("none", "tanh"):
        raise UnsupportedError(f"gelu: approximate={form!r} (expected 'none' or 'tanh')")
    fn = _gelu if form == "none" else _gelu_tanh
    return [fn(v) for v in read(args[0]).values]


def _op_clamp(read, values, args):
    low, high = (None if isinstance(values[a], Null) else _number(values[a])
                 for a in (args[1], args[2]))
    return [_clamp(v, low, high) for v in read(args[0]).values]


def _op_mean(read, values, args):
    x = read(args[0])
    dims = _int_list(values[args[1]])
    dims = _norm_dims(dims, len(x.shape)) if dims else list(range(len(x.shape)))
    lines = _lines(x.shape, dims, len(x.values))
    return [math.fsum(x.values[p] for p in line) / len(line) for line in lines]


def _op_softmax(read, values, args):
    x = read(args[0])
    dims = _norm_dims([int(_number(values[args[1]]))], len(x.shape)) if x.shape else []
    out = [0.0] * len(x.values)
    for line in _lines(x.shape, dims, len(x.values)):
        top = max(x.values[p] for p in line)
        exps = [math.exp(x.values[p] - top) for p in line]
        total = math.fsum(exps)
        for p, e in zip(line, exps):
            out[p] = e / total
    return out


def _op_linear(read, values, args):
    x, w = read(args[0]), read(args[1])
    bias = None if isinstance(values[args[2]], Null) else read(args[2]).values
    if not x.shape or len(w.shape) != 2 or x.shape[-1] != w.shape[1]:
        raise FormatError(f"linear: input {list(x.shape)} and weight {list(w.shape)} must be "
                          "[..., K] and [N, K]")
    n, k = w.shape
    rows = [w.values[j * k:(j + 1) * k] for j in range(n)]
    out = []
    for start in range(0, len(x.values), k):
        xs = x.values[start:start + k]
        out += [math.fsum(map(operator.mul, xs, row)) + (bias[j] if bias else 0.0)
                for j, row in enumerate(rows)]
    return out


def _op_same_values(read, values, args):
    """Views, copies and dtype conversions: the elements in order (rounded to ``out``)."""
    return list(read(args[0]).values)


def _op_permute(read, values, args):
    x = read(args[0])
    perm = [d % max(len(x.shape), 1) for d in _int_list(values[args[1]])]
    if sorted(perm) != list(range(len(x.shape))):
        raise FormatError(f"permute: {perm} is not a permutation of {len(x.shape)} dims")
    strides = contiguous_strides(x.shape)
    index = strided_index([x.shape[p] for p in perm], [strides[p] for p in perm])
    return [x.values[i] for i in index]


def _op_embedding(read, values, args):
    """out[..., c] = weight[indices[...], c]; an index outside [0, vocab) raises, as torch
    does (and the runtime, runtime/id_checks.py). padding_idx etc. only matter for
    training."""
    weight, indices = read(args[0]), read(args[1])
    if len(weight.shape) != 2:
        raise FormatError(f"embedding: weight {list(weight.shape)} should be [vocab, dim]")
    vocab, dim = weight.shape
    out = []
    for pos, i in enumerate(indices.values):
        i = int(i)
        if not 0 <= i < vocab:
            raise InputError(f"embedding: id {i} at position {pos} is outside [0, {vocab})")
        out += weight.values[i * dim:(i + 1) * dim]
    return out


def _op_rms_norm(read, values, args):
    return rms_norm(read(args[0]), read(args[1]), _number(values[args[2]], F32_EPS))


def _op_layer_norm(read, values, args):
    """native_layer_norm: [out, mean, rstd] (its output is a ValueList)."""
    x, k = read(args[0]), len(_int_list(values[args[1]]) or [])
    width = math.prod(x.shape[len(x.shape) - k:])
    if not width:
        raise UnsupportedError("native_layer_norm: normalizing over an empty shape")
    has_w, has_b = (not isinstance(values[a], Null) for a in (args[2], args[3]))
    w = read(args[2]).values if has_w else [1.0] * width
    b = read(args[3]).values if has_b else [0.0] * width
    eps = _number(values[args[4]], F32_EPS)
    out, means, rstds = [], [], []
    for start in range(0, len(x.values), width):
        row = x.values[start:start + width]
        mean = math.fsum(row) / width
        rstd = _rsqrt(math.fsum((v - mean) ** 2 for v in row) / width + eps)
        out += [(v - mean) * rstd * w[j] + b[j] for j, v in enumerate(row)]
        means.append(mean)
        rstds.append(rstd)
    return [out, means, rstds]


# name -> (argument count, function(read, values, args) -> flat output values)
OPS = {
    "aten.add.Tensor": (4, _binary(operator.add, True)),
    "aten.sub.Tensor": (4, _binary(operator.sub, True)),
    "aten.mul.Tensor": (3, _binary(operator.mul, False)),
    "aten.div.Tensor": (3, _binary(_div, False)),
    "aten.rsqrt.default": (2, _unary(_rsqrt)),
    "aten.sigmoid.default": (2, _unary(_sigmoid)),
    "aten.pow.Tensor_Scalar": (3, _op_pow),
    "aten.add.Scalar": (4, _op_add_scalar),
    "aten.tanh.default": (2, _unary(math.tanh)),
    "aten.gelu.default": (3, _op_gelu),
    "aten.relu.default": (2, _unary(_relu)),
    "aten.exp.default": (2, _unary(_exp)),
    "aten.neg.default": (2, _unary(operator.neg)),
    "aten.abs.default": (2, _unary(abs)),
    "aten.sqrt.default": (2, _unary(_sqrt)),
    "aten.clamp.default": (4, _op_clamp),
    "aten.hardtanh.default": (4, _op_clamp),
    "aten.mean.dim": (5, _op_mean),
    "aten._softmax.default": (4, _op_softmax),
    "aten.linear.default": (4, _op_linear),
    "aten.view_copy.default": (3, _op_same_values),
    "aten.squeeze_copy.dims": (3, _op_same_values),
    "aten.unsqueeze_copy.default": (3, _op_same_values),
    "aten.clone.default": (3, _op_same_values),
    "aten.alias_copy.default": (2, _op_same_values),
    "dim_order_ops._clone_dim_order.default": (4, _op_same_values),
    "dim_order_ops._to_dim_order_copy.default": (8, _op_same_values),
    "et_vk.prepack.default": (2, _op_same_values),
    "aten.permute_copy.default": (3, _op_permute),
    "et_vk.rms_norm.default": (4, _op_rms_norm),
    "aten.native_layer_norm.default": (6, _op_layer_norm),
    "aten.embedding.default": (6, _op_embedding),
}


def supported_ops() -> list[str]:
    return sorted(OPS)


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
    if op.name not in OPS:
        raise UnsupportedError(f"op {op.name!r} ({label}) has no CPU reference; "
                               f"the reference computes: {', '.join(supported_ops())}")
    count, fn = OPS[op.name]
    if len(op.args) != count:
        raise FormatError(f"{op.name} takes {count} arguments, found {len(op.args)}", field=label)
    last = values[op.args[-1]]
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
    runtime.Tensor per plan output, in the plan's dtypes.
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
