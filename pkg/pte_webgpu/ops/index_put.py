"""``aten::index_put.out [self, indices: Tensor?[], values, accumulate, out]`` (a plan
kernel; shaders/index_put.wgsl): out = self with ``out[:, ..., idx, ...] = values``, the
write of a plain-torch KV cache (``cache[:, :, pos] = k``; ``aten::copy_`` then puts out
into the mutable buffer). One index tensor (int32, or int64 held as int32, any shape)
after any number of None; values broadcast to the indexed shape. ``accumulate=True`` is
refused.
"""

from __future__ import annotations

from math import prod

from ..errors import FormatError, UnsupportedError
from ..model.graph import ListValue, Null, Scalar, TensorValue
from ..shaders.compose import Binding, Entry, Uniform
from .common import check_rank, contiguous_strides, elementwise_workgroup, float_and_word_kernels
from .copying import broadcast_strides, kind, strided_copy
from .registry import define

PARAMS = Uniform(("numel", "u32"), ("rank", "u32"), ("dim_size", "u32"), ("dim_stride", "u32"),
                 ("shape", "vec8"), ("dst_strides", "vec8"), ("val_strides", "vec8"),
                 ("idx_strides", "vec8"))
_BINDINGS = (Binding(0, "vals", type="word"), Binding(1, "idx", type="i32"),
             Binding(2, "dst", "read_write", type="word"))
_ENTRIES = (Entry("main", "put_item", "params.numel"),)
_SNIPPETS = ("shape_index", "strided_offset")
FLOATS, WORDS = float_and_word_kernels("index_put", _BINDINGS, PARAMS, snippets=_SNIPPETS,
                                       entries=_ENTRIES)


def _layout(values, args, where):
    """(dim, index id, indexed shape, dst strides, idx strides) of one index_put."""
    self_shape = tuple(values[args[0]].shape)
    items = values[args[1]]
    if not isinstance(items, ListValue):
        raise FormatError(f"index_put: value {args[1]} should be a list of tensors", field=where)
    given = [(p, v) for p, v in enumerate(items.items)
             if v >= 0 and not isinstance(values[v], Null)]
    if len(given) != 1 or not isinstance(values[given[0][1]], TensorValue):
        raise UnsupportedError(f"{where}: index_put with {len(given)} index tensors (one is "
                               "supported)")
    acc = values[args[3]]
    if isinstance(acc, Scalar) and acc.value:
        raise UnsupportedError(f"{where}: index_put with accumulate=True")
    dim, idx_id = given[0]
    idx = values[idx_id]
    if idx.dtype.name not in ("int32", "int64") or dim >= len(self_shape):
        raise UnsupportedError(f"{where}: index_put index {idx.dtype.name} at dim {dim} of "
                               f"{list(self_shape)}")
    shape = self_shape[:dim] + tuple(idx.shape) + self_shape[dim + 1:]
    full = contiguous_strides(self_shape)
    k = len(idx.shape)
    dst = full[:dim] + [0] * k + full[dim + 1:]
    idx_s = [0] * dim + contiguous_strides(idx.shape) + [0] * (len(self_shape) - dim - 1)
    return dim, idx_id, shape, dst, idx_s, self_shape[dim], full[dim]


async def build(ctx, op):
    self_id, _list, vals_id, _acc, out_id = ctx.args(op, 5)
    where = ctx.where(op)
    dim, idx_id, shape, dst, idx_s, dim_size, dim_stride = _layout(ctx.graph.values, op.args,
                                                                   where)
    kind(ctx, op, self_id, vals_id, out_id)
    out = ctx.tensor(out_id, op)
    if out.shape != ctx.tensor(self_id, op).shape:
        raise FormatError(f"index_put: output {list(out.shape)} differs from self", field=where)
    check_rank(op, shape)
    if self_id != out_id:
        await strided_copy(ctx, op, self_id, out_id, out.shape, contiguous_strides(out.shape),
                           contiguous_strides(out.shape))
    val_strides = broadcast_strides(ctx.tensor(vals_id, op).shape, shape, "index_put values")
    numel = prod(shape)
    if numel == 0:
        return
    word = kind(ctx, op, vals_id, out_id) == "word"
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(WORDS if word else FLOATS, {"wg_size": wg},
                                  half=not word and ctx.half(out_id))
    params = PARAMS.pack(numel=numel, rank=len(shape), dim_size=dim_size, dim_stride=dim_stride,
                         shape=shape, dst_strides=dst, val_strides=val_strides,
                         idx_strides=idx_s)
    ctx.dispatch(op, pipeline, [(0, vals_id), (1, idx_id), (2, out_id),
                                (3, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-numel // wg)))


def reference(read, values, args):
    dim, idx_id, shape, dst, idx_s, dim_size, dim_stride = _layout(values, args, "index_put")
    out = list(read(args[0]).values)
    vals, idx = read(args[2]), read(idx_id).values
    from .cpu_reference import broadcast_index_map, strided_index
    v_map = broadcast_index_map(vals.shape, shape)
    for d_at, q, v in zip(strided_index(shape, dst), strided_index(shape, idx_s), v_map):
        row = int(idx[q])
        row += dim_size if row < 0 else 0
        if 0 <= row < dim_size:
            out[d_at + row * dim_stride] = vals.values[v]
    return out


define("aten.index_put.default", build, reference, 5, half=True)
