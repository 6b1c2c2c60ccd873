"""Copies through strides (shaders/strided_copy.wgsl): ``aten.cat.default``,
``aten.expand_copy.default`` and the plan kernel ``aten::copy_``.

``cat [tensors: ValueList, dim: Int, out]``: each input is copied into its slice of out
(empty 1-D inputs are skipped, as torch does). ``expand_copy [self, size: IntList,
implicit: Bool, out]``: ``-1`` keeps a size; new leading dims and size-1 dims read with
stride 0. ``copy_ [self, src, non_blocking, out]`` (a plan kernel, writing an ExecuTorch
mutable buffer in place): src broadcast into self. Float tensors (f32, or f16 kept as
f16) and int32/int64/bool, held as 4-byte words, copied as bits.
"""

from __future__ import annotations

from math import prod

from ..errors import FormatError, UnsupportedError
from ..model.graph import ListValue
from ..shaders.compose import Binding, Entry, Uniform
from . import cpu_reference as cpu
from .args import int_list, number
from .common import (
    check_rank, contiguous_strides, elementwise_workgroup, float_and_word_kernels, normalize_dim,
)
from .exec_ints import follow_actual_size
from .registry import define
from .sizes import cat as cat_size
from .sizes import expand as expand_size

FLOAT_DTYPES = ("float32", "float16")
WORD_DTYPES = ("int32", "int64", "bool")  # held in 4 bytes (runtime/storage.py)

PARAMS = Uniform(("numel", "u32"), ("rank", "u32"), ("src_offset", "u32"),
                 ("dst_offset", "u32"), ("shape", "vec8"), ("src_strides", "vec8"),
                 ("dst_strides", "vec8"))
_BINDINGS = (Binding(0, "src", type="word"), Binding(1, "dst", "read_write", type="word"))
_ENTRIES = (Entry("main", "copy_item", "params.numel"),)
_SNIPPETS = ("shape_index", "strided_offset")
FLOATS, WORDS = float_and_word_kernels("strided_copy", _BINDINGS, PARAMS, snippets=_SNIPPETS,
                                       entries=_ENTRIES)


def kind(ctx, op, *vids) -> str:
    """"float" or "word" for tensors that must share one storage type; else an error."""
    names = {ctx.tensor(v, op).dtype.name for v in vids}
    halves = {ctx.half(v) for v in vids}
    if names <= set(FLOAT_DTYPES) and len(halves) == 1:
        return "float"
    if len(names) == 1 and names <= set(WORD_DTYPES):
        return "word"
    raise UnsupportedError(f"{op.name}: tensors of {sorted(names)} in one op are not supported "
                           f"(float, or one of int32/int64/bool) ({ctx.where(op)})")


async def strided_copy(ctx, op, src_id, dst_id, shape, src_strides, dst_strides,
                       src_offset: int = 0, dst_offset: int = 0) -> None:
    numel = prod(shape)
    if numel == 0:
        return
    check_rank(op, shape)
    word = kind(ctx, op, src_id, dst_id) == "word"
    wg = elementwise_workgroup(ctx)
    kernel = WORDS if word else FLOATS
    pipeline = await ctx.pipeline(kernel, {"wg_size": wg}, half=not word and ctx.half(dst_id))
    params = PARAMS.pack(numel=numel, rank=len(shape), src_offset=src_offset,
                         dst_offset=dst_offset, shape=shape, src_strides=src_strides,
                         dst_strides=dst_strides)
    ctx.dispatch(op, pipeline, [(0, src_id), (1, dst_id),
                                (2, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-numel // wg)))
    if tuple(shape) == tuple(ctx.graph.values[dst_id].shape) and not dst_offset:
        follow_actual_size(ctx, dst_id, wg)  # the whole output, element i by invocation i


def broadcast_strides(shape, out_shape, what: str) -> list[int]:
    """Strides of contiguous ``shape`` read through ``out_shape`` (0 on broadcast dims)."""
    if len(shape) > len(out_shape):
        raise FormatError(f"{what}: shape {list(shape)} has more dims than {list(out_shape)}")
    padded = (1,) * (len(out_shape) - len(shape)) + tuple(shape)
    strides = contiguous_strides(padded)
    out = []
    for s, o, t in zip(padded, out_shape, strides):
        if s != o and s != 1:
            raise FormatError(f"{what}: shape {list(shape)} does not broadcast to "
                              f"{list(out_shape)}")
        out.append(0 if s == 1 else t)
    return out


# --- cat ----------------------------------------------------------------------------
def _cat_parts(values, list_id, dim_vid, out_shape, where):
    items = values[list_id]
    if not isinstance(items, ListValue) or items.kind not in ("value_list", "tensor_list"):
        raise FormatError(f"aten.cat.default: value {list_id} should be a list of tensors",
                          field=where)
    rank = len(out_shape)
    dim = normalize_dim(int(number(values[dim_vid])), rank, "aten.cat.default")
    parts, at = [], 0
    for vid in items.items:
        shape = tuple(values[vid].shape)
        if shape == (0,) and rank != 1:
            continue  # torch skips empty 1-D inputs
        if len(shape) != rank or any(s != o for d, (s, o) in enumerate(zip(shape, out_shape))
                                     if d != dim):
            raise FormatError(f"aten.cat.default: input {list(shape)} does not fit output "
                              f"{list(out_shape)} along dim {dim}", field=where)
        parts.append((vid, at))
        at += shape[dim]
    if at != out_shape[dim]:
        raise FormatError(f"aten.cat.default: inputs add up to {at} along dim {dim}, output "
                          f"has {out_shape[dim]}", field=where)
    return dim, parts


async def build_cat(ctx, op):
    list_id, dim_vid, out_id = ctx.args(op, 3)
    out = ctx.tensor(out_id, op)
    dim, parts = _cat_parts(ctx.graph.values, list_id, dim_vid, out.shape, ctx.where(op))
    out_strides = contiguous_strides(out.shape)
    for vid, at in parts:
        shape = ctx.tensor(vid, op).shape
        await strided_copy(ctx, op, vid, out_id, shape, contiguous_strides(shape), out_strides,
                           dst_offset=at * out_strides[dim])


def reference_cat(read, values, args):
    out_shape = values[args[-1]].shape
    dim, parts = _cat_parts(values, args[0], args[1], out_shape, "aten.cat.default")
    arrays = [read(vid) for vid, _ in parts]
    outer, out = prod(out_shape[:dim]), []
    for o in range(outer):
        for a in arrays:
            chunk = prod(a.shape[dim:])
            out += a.values[o * chunk:(o + 1) * chunk]
    return out


# --- expand_copy ----------------------------------------------------------------------
def _expand_strides(shape, sizes, out_shape, where):
    if len(sizes) != len(out_shape) or len(shape) > len(sizes):
        raise FormatError(f"aten.expand_copy.default: sizes {sizes} do not fit input "
                          f"{list(shape)} and output {list(out_shape)}", field=where)
    lead = len(sizes) - len(shape)
    want = [shape[d - lead] if s == -1 and d >= lead else s for d, s in enumerate(sizes)]
    if tuple(want) != tuple(out_shape):
        raise FormatError(f"aten.expand_copy.default: sizes {sizes} give {want}, output is "
                          f"{list(out_shape)}", field=where)
    return broadcast_strides(shape, out_shape, "aten.expand_copy.default")


async def build_expand(ctx, op):
    x_id, size_id, _implicit, out_id = ctx.args(op, 4)
    x, out = ctx.tensor(x_id, op), ctx.tensor(out_id, op)
    sizes = int_list(ctx.graph.values[size_id])
    strides = _expand_strides(x.shape, sizes, out.shape, ctx.where(op))
    await strided_copy(ctx, op, x_id, out_id, out.shape, strides, contiguous_strides(out.shape))


def reference_expand(read, values, args):
    out_shape = values[args[-1]].shape
    x = read(args[0])
    _expand_strides(x.shape, int_list(values[args[1]]), out_shape, "expand_copy")
    return [x.values[i] for i in cpu.broadcast_index_map(x.shape, out_shape)]


# --- copy_ (plan kernel) --------------------------------------------------------------
async def build_copy_(ctx, op):
    if len(op.args) not in (3, 4):
        raise FormatError(f"aten.copy_: expected (self, src, non_blocking[, out]), got "
                          f"{len(op.args)} arguments", field=ctx.where(op))
    self_id, src_id = op.args[:2]
    dst = ctx.tensor(self_id, op)
    src = ctx.tensor(src_id, op)
    if dst.dtype.name != src.dtype.name:
        raise UnsupportedError(f"aten.copy_: {src.dtype.name} into {dst.dtype.name} "
                               f"(a dtype conversion) is not supported ({ctx.where(op)})")
    strides = broadcast_strides(src.shape, dst.shape, "aten.copy_")
    await strided_copy(ctx, op, src_id, self_id, dst.shape, strides,
                       contiguous_strides(dst.shape))
    if len(op.args) == 4 and op.args[3] != self_id:
        ctx.copy(op, self_id, op.args[3])


def reference_copy_(read, values, args):
    dst_shape = values[args[0]].shape
    src = read(args[1])
    return [src.values[i] for i in cpu.broadcast_index_map(src.shape, dst_shape)]


def cat_sizes(op, shape, integer, values):
    """Parts are written at their bound offsets: only the last may be smaller along dim."""
    items = values[op.args[0]].items
    dim = integer(op.args[1]) % max(len(values[items[0]].shape), 1)
    for v in items[:-1]:
        if shape(v)[dim] != values[v].shape[dim]:
            raise UnsupportedError(f"{op.name}: a part smaller than its bound along the cat "
                                   f"dim {dim} ({shape(v)[dim]} of {values[v].shape[dim]})")
    return cat_size(op, shape, integer, values)


define("aten.cat.default", build_cat, reference_cat, 3, half=True, sizes=cat_sizes)
define("aten.expand_copy.default", build_expand, reference_expand, 4, half=True,
       sizes=expand_size)
define("aten.copy_.default", build_copy_, reference_copy_, None, half=True)
