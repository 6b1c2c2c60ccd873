"""SymInt ops: integers computed on the host at each execute, before the one submit
(runtime/dynamic.py). They record no GPU work; kernels that need their values read them
from the method's slot buffer (``ctx.dyn.slot(("sym", graph, vid))``).

``et_vk.select_as_symint.default [x, dim, index, out: SymInt]``: one element of ``x``,
which must be a plan input (its host data is at hand; a value computed on the GPU would
need a read-back). ``sym_size.int [t, dim, out: SymInt]``: ``t``'s actual size along
``dim``. ``add`` / ``sub`` / ``mul`` / ``floordiv [a, b, out: SymInt]``: Python's
operator on two Int/SymInt values (the size arithmetic of dynamic shapes, e.g. a
reshape to heads x sequence).
"""

from __future__ import annotations

import operator

from ..errors import FormatError, InputError, UnsupportedError
from ..model.graph import Scalar
from .args import int_or_symint, ref_int
from .registry import register


def reference_select_as_symint(read, values, args):
    x = read(args[0])
    dim, index = ref_int(read, values, args[1]), ref_int(read, values, args[2])
    dim %= len(x.shape)
    return int(x.values[_flat_offset(x.shape, dim, index % x.shape[dim])])


def reference_sym_size(read, values, args):
    shape = read(args[0]).shape
    return int(shape[ref_int(read, values, args[1]) % len(shape)])


# the SymInt arithmetic ExecuTorch's Vulkan partitioner keeps in a delegate
ARITHMETIC = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
              "floordiv": operator.floordiv}


def _arithmetic(name: str, a: int, b: int, where: str) -> int:
    if name == "floordiv" and b == 0:
        raise InputError(f"{where}: SymInt floordiv by zero")
    return ARITHMETIC[name](a, b)


def _symint_reference(name):
    def reference(read, values, args):
        return _arithmetic(name, ref_int(read, values, args[0]), ref_int(read, values, args[1]), name)
    return reference


def _symint_out(ctx, op, vid: int) -> tuple:
    value = ctx.graph.values[vid]
    if not (isinstance(value, Scalar) and value.kind == "symint"):
        raise FormatError(f"{op.name}: output value {vid} should be a SymInt, found "
                          f"{value.kind}", field=ctx.where(op))
    if ctx.dyn is None:
        raise UnsupportedError(f"{op.name} ({ctx.where(op)}) needs execute-time integers")
    return ("sym", ctx.graph_key, vid)


def _flat_offset(shape, dim: int, index: int) -> int:
    """Row-major offset of element ``index`` along ``dim`` (0 along the other dims)."""
    stride = 1
    for d in shape[dim + 1:]:
        stride *= d
    return index * stride


def _on_host(ctx, op, step) -> None:
    """``step(env)`` runs on the host before each submit; the op records no GPU work."""
    ctx.dyn.steps.append(step)
    ctx.note_kernel(op, runs_on="host")


@register("et_vk.select_as_symint.default", reference=reference_select_as_symint, args=4)
async def build_select_as_symint(ctx, op):
    x_id, dim_id, index_id, out_id = ctx.args(op, 4)
    key = _symint_out(ctx, op, out_id)
    x = ctx.int_tensor(x_id, op)
    dim, index = int_or_symint(ctx, dim_id, op), int_or_symint(ctx, index_id, op)
    if dim is None or index is None:
        raise UnsupportedError(f"{op.name}: dim and index must be Ints ({ctx.where(op)})")
    pid = ctx.plan_ids.get(x_id)
    if pid is None or pid not in getattr(ctx.dyn, "plan_inputs", ()):
        raise UnsupportedError(f"{op.name} ({ctx.where(op)}) reads value {x_id}, which is "
                               "computed on the GPU; pte-webgpu reads SymInts only from the "
                               "method's inputs")
    rank = len(x.shape)
    if not -rank <= dim < rank:
        raise FormatError(f"{op.name}: dim {dim} is out of range for {list(x.shape)}",
                          field=ctx.where(op))
    dim %= rank
    where, graph = ctx.where(op), ctx.graph_key

    def step(env):
        host = env.host_inputs[pid]
        shape = env.shape(graph, x_id, x.shape)
        if not -shape[dim] <= index < shape[dim]:
            raise InputError(f"{where}: index {index} is out of range for the input's shape "
                             f"{list(shape)}")
        flat = _flat_offset(shape, dim, index % shape[dim])
        item = host.dtype.itemsize
        raw = bytes(host.memoryview()[flat * item:(flat + 1) * item])
        env.values[key] = int.from_bytes(raw, "little", signed=True)
    _on_host(ctx, op, step)


@register("sym_size.int", reference=reference_sym_size, args=3)
async def build_sym_size(ctx, op):
    t_id, dim_id, out_id = ctx.args(op, 3)
    key = _symint_out(ctx, op, out_id)
    t = ctx.tensor(t_id, op)
    dim = int_or_symint(ctx, dim_id, op)
    if dim is None or not -len(t.shape) <= dim < len(t.shape):
        raise FormatError(f"{op.name}: dim must be an Int within rank {len(t.shape)}",
                          field=ctx.where(op))
    dim %= len(t.shape)
    graph = ctx.graph_key

    def step(env):
        env.values[key] = int(env.shape(graph, t_id, t.shape)[dim])
    _on_host(ctx, op, step)


async def build_symint_arithmetic(ctx, op):
    a_id, b_id, out_id = ctx.args(op, 3)
    key = _symint_out(ctx, op, out_id)
    parts = [(int_or_symint(ctx, vid, op), ("sym", ctx.graph_key, vid)) for vid in (a_id, b_id)]
    where, name = ctx.where(op), op.name

    def step(env):
        got = []
        for static, k in parts:
            if static is None and k not in env.values:
                raise UnsupportedError(f"{where}: SymInt {k[2]} is read before it is set")
            got.append(static if static is not None else int(env.values[k]))
        env.values[key] = _arithmetic(name, *got, where)
    _on_host(ctx, op, step)


for _name in ARITHMETIC:
    register(_name, reference=_symint_reference(_name), args=3)(build_symint_arithmetic)
