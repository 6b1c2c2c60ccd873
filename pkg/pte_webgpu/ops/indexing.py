"""Gathers along one dim (shaders/indexing.wgsl).

``aten.index.Tensor [self, indices: ValueList, out]``: one index tensor (int32, or int64
held as int32) at position p of the list, Nulls before it: ``out = self[:, ..., idx, ...]``
of shape ``self[:p] + idx.shape + self[p+1:]``.
``aten.select_copy.int [self, dim, index, out]``: ``index`` may be negative (from the end;
on a dynamic dim the actual size counts, at execute).
``aten.slice_copy.Tensor [self, dim, start, end, step, out]``: start/end are Int, SymInt
or Null and clamp as Python slicing does, against the actual size at execute.
``aten.index_select.default [self, dim, index, out]``: index.Tensor's gather along dim (a
negative index counts from the end; torch raises there).
``aten.gather.default [self, dim, index, sparse_grad, out]`` (shaders/gather.wgsl): out has
index's shape; an index outside the dim raises at execute, as torch.
Float tensors (f32, or f16 stored as f16), and int32/int64/bool moved as 4-byte words.
"""

from __future__ import annotations

from math import prod

from ..errors import FormatError, InputError, UnsupportedError
from ..model.graph import Null
from ..shaders.compose import Binding, Entry, Uniform
from . import sizes
from . import cpu_reference as cpu
from .args import ref_int
from .common import (
    check_rank, contiguous_strides, elementwise_workgroup, float_and_word_kernels, normalize_dim,
)
from .exec_ints import follow_actual_size, int_value, slots
from .registry import register


def _ref_take(x, dim, rows):
    """x's elements at positions ``rows`` (None: 0.0) along ``dim``, row-major."""
    inner = prod(x.shape[dim + 1:])
    outer = prod(x.shape[:dim])
    size = x.shape[dim]
    out = []
    for o in range(outer):
        for r in rows:
            if r is None or not 0 <= r < size:
                out += [0.0] * inner
            else:
                at = (o * size + r) * inner
                out += x.values[at:at + inner]
    return out


def reference_index(read, values, args):
    x = read(args[0])
    given = [(p, v) for p, v in enumerate(values[args[1]].items)
             if v >= 0 and not isinstance(values[v], Null)]
    dim, idx_id = given[0]
    rows = [int(r) + (x.shape[dim] if r < 0 else 0) for r in read(idx_id).values]
    return _ref_take(x, dim, rows)


def reference_select(read, values, args):
    x = read(args[0])
    dim = ref_int(read, values, args[1]) % len(x.shape)
    return _ref_take(x, dim, [ref_int(read, values, args[2]) % x.shape[dim]])


def reference_slice(read, values, args):
    x = read(args[0])
    dim = ref_int(read, values, args[1]) % len(x.shape)
    start, end = (ref_int(read, values, a) for a in args[2:4])
    step = ref_int(read, values, args[4], default=1)
    return _ref_take(x, dim, list(range(x.shape[dim])[slice(start, end, step)]))

PARAMS = Uniform(("numel", "u32"), ("inner", "u32"), ("out_len", "u32"), ("in_len", "u32"),
                 ("step", "u32"), ("start_slot", "u32"))
_BINDINGS = (Binding(0, "src", type="word"), Binding(1, "idx", type="i32"),
             Binding(2, "out", "read_write", type="word"), Binding(3, "ints", type="i32"),
             # ids out of range: count, claimed, position, value (runtime/id_checks.py)
             Binding(5, "flag", "read_write", type="atomic<u32>"))
_ENTRIES = (Entry("take", "take_item", "params.numel"),
            Entry("strided", "strided_item", "params.numel"))
KERNEL, WORDS = float_and_word_kernels("indexing", _BINDINGS, PARAMS, uniform_binding=4,
                                       snippets=("bad_id",), entries=_ENTRIES)


async def _gather(ctx, op, entry, src_id, idx_id, out_id, inner, out_len, in_len, step,
                  ints, start_slot):
    out = ctx.tensor(out_id, op)
    if out.numel == 0:
        return
    wg = min(64, elementwise_workgroup(ctx))
    kernel = KERNEL if out.dtype.name in ("float32", "float16") else WORDS
    pipeline = await ctx.pipeline(kernel, {"wg_size": wg}, entry,
                                  half=kernel is KERNEL and ctx.half(out_id))
    params = ctx.uniform(PARAMS.pack(numel=out.numel, inner=inner, out_len=out_len,
                                     in_len=in_len, step=step, start_slot=start_slot),
                         f"{op.name} params")
    # each entry binds what it uses: `take` the index tensor, `strided` the start slot
    extra = [(1, idx_id), (5, ctx.id_check(idx_id, in_len, op, negative=True))] \
        if entry == "take" else [(3, ints)]
    ctx.dispatch(op, pipeline, [(0, src_id), (2, out_id), (4, params)] + extra,
                 ctx.grid(-(-out.numel // wg)))
    follow_actual_size(ctx, out_id, wg)


WORD_DTYPES = ("int32", "int64", "bool")  # held in 4 bytes (runtime/storage.py)


def _tensors(ctx, op, src_id: int, out_id: int):
    """Source and output: one dtype, float (f32, or f16 kept as f16) or a 4-byte word."""
    src, out = ctx.tensor(src_id, op), ctx.tensor(out_id, op)
    names = {getattr(src.dtype, "name", None), getattr(out.dtype, "name", None)}
    if names <= {"float32", "float16"}:
        if ctx.half(src_id) != ctx.half(out_id):
            raise UnsupportedError(f"{op.name}: input and output differ in float width "
                                   f"({ctx.where(op)})")
    elif len(names) != 1 or not names <= set(WORD_DTYPES):
        raise UnsupportedError(f"{op.name}: {sorted(map(str, names))} tensors are not "
                               f"supported; float, int32, int64 or bool ({ctx.where(op)})")
    return src, out


@register("aten.index.Tensor", half=True, reference=reference_index, args=3,
          sizes=sizes.index)
async def build_index(ctx, op):
    src_id, list_id, out_id = ctx.args(op, 3)
    src, out = _tensors(ctx, op, src_id, out_id)
    items = ctx.graph.values[list_id]
    # a plan kernel (aten::index.Tensor_out) holds an optional_tensor_list, -1 for None
    if getattr(items, "kind", "") not in ("value_list", "tensor_list", "optional_tensor_list"):
        raise FormatError(f"{op.name}: indices should be a ValueList", field=ctx.where(op))
    given = [(p, v) for p, v in enumerate(items.items)
             if v >= 0 and not isinstance(ctx.graph.values[v], Null)]
    if len(given) != 1:
        raise UnsupportedError(f"{op.name}: {len(given)} index tensors; pte-webgpu supports "
                               f"one ({ctx.where(op)})")
    dim, idx_id = given[0]
    idx = ctx.int_tensor(idx_id, op)
    if dim >= len(src.shape):
        raise FormatError(f"{op.name}: index at dim {dim} of {list(src.shape)}",
                          field=ctx.where(op))
    want = tuple(src.shape[:dim]) + tuple(idx.shape) + tuple(src.shape[dim + 1:])
    if tuple(out.shape) != want:
        raise FormatError(f"{op.name}: output {list(out.shape)}, expected {list(want)}",
                          field=ctx.where(op))
    await _gather(ctx, op, "take", src_id, idx_id, out_id, prod(src.shape[dim + 1:]),
                  idx.numel, src.shape[dim], 1, None, 0)


def _static_or_null(ctx, vid):
    value = ctx.graph.values[vid]
    return None if isinstance(value, Null) else value


@register("aten.select_copy.int", half=True, reference=reference_select, args=4,
          sizes=sizes.select)
async def build_select(ctx, op):
    src_id, dim_id, index_id, out_id = ctx.args(op, 4)
    src, out = _tensors(ctx, op, src_id, out_id)
    rank = len(src.shape)
    dim = normalize_dim(int_value(None, ctx.graph.values, ctx.graph_key, dim_id,
                                  ctx.where(op)), rank, op.name)
    want = tuple(src.shape[:dim]) + tuple(src.shape[dim + 1:])
    if tuple(out.shape) != want:
        raise FormatError(f"{op.name}: output {list(out.shape)}, expected {list(want)}",
                          field=ctx.where(op))
    key = ("calc", ctx.graph_key, ctx.op_index, "select")
    graph, where, bound = ctx.graph_key, ctx.where(op), src.shape

    def resolve(env):
        size = env.shape(graph, src_id, bound)[dim]
        index = int_value(env, ctx.graph.values, graph, index_id, where)
        if not -size <= index < size:
            raise InputError(f"{where}: index {index} is out of range for size {size}")
        env.values[key] = index % size
    ctx.dyn.steps.append(resolve)
    ints, (slot,) = slots(ctx, op, [key])
    await _gather(ctx, op, "strided", src_id, None, out_id, prod(src.shape[dim + 1:]), 1,
                  src.shape[dim], 1, ints, slot)


@register("aten.slice_copy.Tensor", half=True, reference=reference_slice, args=6,
          sizes=sizes.slice_)
async def build_slice(ctx, op):
    src_id, dim_id, start_id, end_id, step_id, out_id = ctx.args(op, 6)
    src, out = _tensors(ctx, op, src_id, out_id)
    values, graph, where = ctx.graph.values, ctx.graph_key, ctx.where(op)
    rank = len(src.shape)
    dim = normalize_dim(int_value(None, values, graph, dim_id, where), rank, op.name)
    step = 1 if _static_or_null(ctx, step_id) is None else \
        int_value(None, values, graph, step_id, where)
    if step < 1:
        raise FormatError(f"{op.name}: step {step} must be positive", field=where)
    want = tuple(src.shape[:dim]) + tuple(src.shape[dim + 1:])
    got = tuple(out.shape[:dim]) + tuple(out.shape[dim + 1:])
    if len(out.shape) != rank or got != want or out.shape[dim] > src.shape[dim]:
        raise FormatError(f"{op.name}: output {list(out.shape)} is not a slice of "
                          f"{list(src.shape)} along dim {dim}", field=where)
    key = ("calc", graph, ctx.op_index, "slice")
    bound = src.shape

    def resolve(env):
        size = env.shape(graph, src_id, bound)[dim]
        bounds = [None if _static_or_null(ctx, v) is None else int_value(env, values, graph,
                                                                         v, where)
                  for v in (start_id, end_id)]
        env.values[key] = range(size)[slice(bounds[0], bounds[1], step)].start
    ctx.dyn.steps.append(resolve)
    ints, (slot,) = slots(ctx, op, [key])
    await _gather(ctx, op, "strided", src_id, None, out_id, prod(src.shape[dim + 1:]),
                  out.shape[dim], src.shape[dim], step, ints, slot)


def _index_select_layout(values, args, where):
    src, idx = values[args[0]], values[args[2]]
    if len(idx.shape) > 1:
        raise FormatError(f"aten.index_select.default: index of rank {len(idx.shape)}, "
                          "expected 0 or 1", field=where)
    dim = normalize_dim(int(values[args[1]].value), len(src.shape), "aten.index_select")
    shape = list(src.shape)
    if shape:
        shape[dim] = idx.numel
    return dim, tuple(shape), prod(src.shape[dim + 1:]), idx.numel


def reference_index_select(read, values, args):
    x = read(args[0])
    dim = _index_select_layout(values, args, "aten.index_select.default")[0]
    size = x.shape[dim] if x.shape else 1
    rows = [int(r) + (size if r < 0 else 0) for r in read(args[2]).values]
    return _ref_take(x, dim, rows) if x.shape else [x.values[0]] * len(rows)


@register("aten.index_select.default", half=True, reference=reference_index_select, args=4)
async def build_index_select(ctx, op):
    src_id, dim_id, idx_id, out_id = ctx.args(op, 4)
    src, out = _tensors(ctx, op, src_id, out_id)
    dim, want, inner, count = _index_select_layout(ctx.graph.values, op.args, ctx.where(op))
    idx = ctx.int_tensor(idx_id, op)
    if tuple(out.shape) != want:
        raise FormatError(f"{op.name}: output {list(out.shape)}, expected {list(want)}",
                          field=ctx.where(op))
    await _gather(ctx, op, "take", src_id, idx_id, out_id, inner, idx.numel,
                  src.shape[dim], 1, None, 0)


GATHER_PARAMS = Uniform(("numel", "u32"), ("rank", "u32"), ("dim", "u32"), ("in_len", "u32"),
                        ("shape", "vec8"), ("src_strides", "vec8"))
_GATHER_BINDINGS = (Binding(0, "src", type="word"), Binding(1, "idx", type="i32"),
                    Binding(2, "out", "read_write", type="word"),
                    Binding(4, "flag", "read_write", type="atomic<u32>"))
GATHER, GATHER_WORDS = float_and_word_kernels(
    "gather", _GATHER_BINDINGS, GATHER_PARAMS, uniform_binding=3, snippets=("shape_index", "bad_id"),
    entries=(Entry("main", "gather_item", "params.numel"),))


def _gather_dim(values, args, where) -> int:
    src, idx = values[args[0]], values[args[2]]
    rank = len(src.shape)
    dim = normalize_dim(int(values[args[1]].value), rank, "aten.gather.default")
    if len(idx.shape) != rank or any(i > s for d, (i, s) in enumerate(zip(idx.shape, src.shape))
                                     if d != dim):
        raise FormatError(f"aten.gather.default: index {list(idx.shape)} does not fit input "
                          f"{list(src.shape)} along dim {dim}", field=where)
    return dim


def reference_gather(read, values, args):
    x, idx = read(args[0]), read(args[2])
    dim = _gather_dim(values, args, "aten.gather.default") if x.shape else 0
    if not x.shape:
        return [x.values[0] for _ in idx.values]
    strides = contiguous_strides(x.shape)
    coords = cpu.strided_index(idx.shape, [s if d != dim else 0 for d, s in enumerate(strides)])
    size = x.shape[dim]
    return [x.values[base + int(r) * strides[dim]] if 0 <= r < size else 0.0
            for base, r in zip(coords, idx.values)]


@register("aten.gather.default", half=True, reference=reference_gather, args=5)
async def build_gather(ctx, op):
    src_id, dim_id, idx_id, _sparse, out_id = ctx.args(op, 5)
    src, out = _tensors(ctx, op, src_id, out_id)
    idx = ctx.int_tensor(idx_id, op)
    check_rank(op, src.shape)
    dim = _gather_dim(ctx.graph.values, op.args, ctx.where(op))
    if tuple(out.shape) != tuple(idx.shape):
        raise FormatError(f"{op.name}: output {list(out.shape)}, index {list(idx.shape)}",
                          field=ctx.where(op))
    if out.numel == 0:
        return
    rank = max(1, len(src.shape))
    in_len = src.shape[dim] if src.shape else 1
    params = GATHER_PARAMS.pack(numel=out.numel, rank=rank, dim=dim, in_len=in_len,
                                shape=list(out.shape) or [1],
                                src_strides=contiguous_strides(src.shape) or [1])
    wg = min(64, elementwise_workgroup(ctx))
    kernel = GATHER if out.dtype.name in ("float32", "float16") else GATHER_WORDS
    pipeline = await ctx.pipeline(kernel, {"wg_size": wg}, half=kernel is GATHER and ctx.half(out_id))
    ctx.dispatch(op, pipeline, [(0, src_id), (1, idx_id), (2, out_id),
                                (3, ctx.uniform(params, f"{op.name} params")),
                                (4, ctx.id_check(idx_id, in_len, op))],
                 ctx.grid(-(-out.numel // wg)))
