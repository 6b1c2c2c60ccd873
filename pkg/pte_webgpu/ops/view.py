"""Shape and layout ops. Reshapes keep the bytes: ``ctx.view`` shares the input's
buffer when nothing overwrites it while the output is read, else copies.
``aten.permute_copy.default`` moves elements (binary.py's strided ``gather``), unless
the permutation only moves size-1 dims, which is a reshape too.

``aten.view_copy.default [self, size, out]``, ``aten.squeeze_copy.dims [self, dims, out]``,
``aten.unsqueeze_copy.default [self, dim, out]``, ``aten.clone.default [self,
memory_format, out]``, ``aten.alias_copy.default [self, out]``,
``dim_order_ops._clone_dim_order.default [self, non_blocking, dim_order, out]``,
``dim_order_ops._to_dim_order_copy.default [self, dtype, layout, device, pin_memory,
non_blocking, dim_order, out]`` (float16 <-> float32 too), ``et_vk.prepack.default
[src, out]`` (out gets the constant's bytes), ``aten.permute_copy.default [self, dims, out]``
(and ``aten.permute.default``, the same arguments, where a plan kernel names it).
"""

from __future__ import annotations

from math import prod

from ..errors import FormatError, UnsupportedError
from ..model.graph import ListValue, Scalar
from . import cpu_reference as cpu
from . import sizes
from .args import int_arg, int_list, int_list_arg
from .binary import gather
from .common import check_rank, contiguous_strides, normalize_dim, normalize_dims, same_numel
from .exec_ints import same_places
from .registry import define, register
from .unary import round_buffer_to_half, round_to_half


def same_values(read, values, args):
    """Reference of views, copies and dtype conversions: the elements in order
    (reference.py rounds them to the output's dtype)."""
    return list(read(args[0]).values)


def permute_reference(read, values, args):
    x = read(args[0])
    perm = [d % max(len(x.shape), 1) for d in int_list(values[args[1]])]
    if sorted(perm) != list(range(len(x.shape))):
        raise FormatError(f"permute: {perm} is not a permutation of {len(x.shape)} dims")
    strides = contiguous_strides(x.shape)
    index = cpu.strided_index([x.shape[p] for p in perm], [strides[p] for p in perm])
    return [x.values[i] for i in index]


def view_shape(shape, size, name: str = "view") -> tuple[int, ...]:
    """``size`` of a view of ``shape`` with one -1 inferred."""
    size = list(size)
    if size.count(-1) > 1 or any(s < -1 for s in size):
        raise FormatError(f"{name}: view size {size} is not valid")
    if -1 in size:
        known = prod(s for s in size if s != -1)
        if known == 0 or prod(shape) % known:
            raise FormatError(f"{name}: view size {size} does not fit {prod(shape)} elements")
        size[size.index(-1)] = prod(shape) // known
    return tuple(size)


def squeeze_shape(shape, dims) -> tuple[int, ...]:
    """``shape`` without those of ``dims`` (normalised) that have size 1."""
    return tuple(s for d, s in enumerate(shape) if not (d in dims and s == 1))


def unsqueeze_shape(shape, dim: int) -> tuple[int, ...]:
    shape = tuple(shape)
    return shape[:dim] + (1,) + shape[dim:]


def permute_gather(shape, perm) -> tuple[list[int], list[int]]:
    """(out shape, source strides) of ``permute(shape, perm)``, size-1 dims dropped and
    out dims merged where the source is contiguous across them."""
    strides = contiguous_strides(shape)
    runs: list[list[int]] = []
    for p in perm:
        if shape[p] == 1:
            continue
        if runs and runs[-1][1] == strides[p] * shape[p]:
            runs[-1] = [runs[-1][0] * shape[p], strides[p]]
        else:
            runs.append([shape[p], strides[p]])
    return [s for s, _ in runs], [t for _, t in runs]


def _check_shape(ctx, op, out_id: int, want) -> None:
    out = ctx.tensor(out_id, op)
    if tuple(out.shape) != tuple(want):
        raise FormatError(f"{op.name}: output shape {list(out.shape)}, expected {list(want)}",
                          field=ctx.where(op))


def _reshape(ctx, op, x_id: int, out_id: int, want) -> None:
    """out, of shape ``want``, holds x's elements in the same order (the bytes are shared
    or copied, never converted): one dtype (int causal masks reshape too), or integer ids
    int32/int64 (both held as int32)."""
    x, out = ctx.tensor(x_id, op), ctx.tensor(out_id, op)
    ids = ("int32", "int64")
    if x.dtype is not out.dtype and not (x.dtype is not None and out.dtype is not None
                                         and x.dtype.name in ids and out.dtype.name in ids):
        ctx.float_tensor(x_id, op)
        ctx.float_tensor(out_id, op)
    same_numel(ctx, op, x_id, out_id)
    _check_shape(ctx, op, out_id, want)
    ctx.view(op, x_id, out_id)


def _check_dim_order(ctx, op, vid: int, rank: int) -> None:
    order = int_list_arg(ctx, vid, op, allow_null=True)
    if order is not None and order != list(range(rank)):
        raise UnsupportedError(f"{op.name}: dim order {order} is not contiguous "
                               f"({ctx.where(op)})")


@register("aten.view_copy.default", half=True, reference=same_values, args=3,
          sizes=sizes.view)
async def build_view(ctx, op):
    x_id, size_id, out_id = ctx.args(op, 3)
    sizes = ctx.graph.values[size_id]
    if isinstance(sizes, ListValue) and sizes.kind == "value_list":
        size = _value_list_sizes(ctx, op, sizes, out_id)
    else:
        size = int_list_arg(ctx, size_id, op)
    _reshape(ctx, op, x_id, out_id, view_shape(ctx.tensor(x_id, op).shape, size, op.name))


def _value_list_sizes(ctx, op, sizes, out_id: int) -> list[int]:
    """Sizes given as Int/SymInt values (dynamic shapes). The buffers hold the bound
    shapes, so the view is recorded at the output's bound; at execute the actual sizes
    follow ops/sizes.py, and a host step checks that the elements keep their places
    (the dynamic dim is the outermost one larger than 1 on both sides), else refuses."""
    out = ctx.tensor(out_id, op)
    if len(sizes.items) != len(out.shape):
        raise FormatError(f"{op.name}: {len(sizes.items)} sizes for a rank-{len(out.shape)} "
                          "output", field=ctx.where(op))
    size = []
    for vid, bound in zip(sizes.items, out.shape):
        value = ctx.graph.values[vid]
        if isinstance(value, Scalar) and value.kind == "int":
            size.append(int(value.value))
        elif isinstance(value, Scalar) and value.kind == "symint":
            size.append(bound)
        else:
            raise FormatError(f"{op.name}: size value {vid} is a {value.kind}, expected an Int "
                              "or SymInt", field=ctx.where(op))
    if ctx.dyn is not None:
        x_id, graph, where = op.args[0], ctx.graph_key, ctx.where(op)
        x_bound = ctx.tensor(x_id, op).shape

        def check(env):
            if not same_places(env.shape(graph, x_id, x_bound), x_bound,
                               env.shape(graph, out_id, out.shape), out.shape):
                raise UnsupportedError(f"{where}: this view moves elements of a dynamic-shape "
                                       "tensor; pte-webgpu supports views that keep the "
                                       "dynamic dim outermost")
        ctx.dyn.steps.append(check)
    return size


@register("aten.squeeze_copy.dims", half=True, reference=same_values, args=3,
          sizes=sizes.squeeze)
async def build_squeeze(ctx, op):
    x_id, dims_id, out_id = ctx.args(op, 3)
    shape = ctx.tensor(x_id, op).shape
    dims = normalize_dims(int_list_arg(ctx, dims_id, op), len(shape), op.name)
    _reshape(ctx, op, x_id, out_id, squeeze_shape(shape, dims))


@register("aten.unsqueeze_copy.default", half=True, reference=same_values, args=3,
          sizes=sizes.unsqueeze)
async def build_unsqueeze(ctx, op):
    x_id, dim_id, out_id = ctx.args(op, 3)
    shape = ctx.tensor(x_id, op).shape
    dim = normalize_dim(int_arg(ctx, dim_id, op), len(shape) + 1, op.name)
    _reshape(ctx, op, x_id, out_id, unsqueeze_shape(shape, dim))


async def build_clone(ctx, op):
    if op.name == "dim_order_ops._clone_dim_order.default":
        x_id, _blocking, order_id, out_id = ctx.args(op, 4)
        _check_dim_order(ctx, op, order_id, len(ctx.tensor(x_id, op).shape))
    elif op.name == "aten.clone.default":
        x_id, _format, out_id = ctx.args(op, 3)
    else:
        x_id, out_id = ctx.args(op, 2)
    _reshape(ctx, op, x_id, out_id, ctx.tensor(x_id, op).shape)


for _name, _count in (("aten.clone.default", 3), ("aten.alias_copy.default", 2),
                      ("dim_order_ops._clone_dim_order.default", 4)):
    define(_name, build_clone, same_values, _count, half=True, sizes=sizes.same_as_first)


@register("dim_order_ops._to_dim_order_copy.default", half=True, reference=same_values, args=8,
          sizes=sizes.same_as_first)
async def build_to_dim_order_copy(ctx, op):
    x_id, *_, order_id, out_id = ctx.args(op, 8)
    x, out = ctx.tensor(x_id, op), ctx.tensor(out_id, op)
    _check_dim_order(ctx, op, order_id, len(x.shape))
    kinds = {x.dtype.name, out.dtype.name}
    if x.dtype.name in ("int32", "int64", "bool") and out.dtype.name in ("float32", "float16"):
        from .mixed import to_float  # a conversion kernel (ops/mixed.py)
        _check_shape(ctx, op, out_id, x.shape)
        if out.dtype.name == "float16" and not ctx.half(out_id):
            # float16 widened to f32: convert into scratch, then round to float16's precision
            scratch = ctx.resources.buffer(ctx.storage.nbytes(out), f"{op.name} scratch")
            await to_float(ctx, op, x_id, out_id, into=scratch)
            await round_buffer_to_half(ctx, op, scratch, out_id)
        else:
            await to_float(ctx, op, x_id, out_id)
        return
    if x.dtype != out.dtype and kinds != {"float32", "float16"}:
        raise UnsupportedError(f"{op.name}: converting {x.dtype.name} to {out.dtype.name} is "
                               f"not supported ({ctx.where(op)})")
    if out.dtype.name == "float16" and x.dtype.name == "float32":
        _check_shape(ctx, op, out_id, x.shape)
        await round_to_half(ctx, op, x_id, out_id)  # both live as f32: only the values change
        return
    _reshape(ctx, op, x_id, out_id, x.shape)  # same dtype, or float16 -> float32 (exact)


@register("aten.permute_copy.default", "aten.permute.default", half=True,
          reference=permute_reference, args=3, sizes=sizes.permute)
async def build_permute(ctx, op):
    x_id, dims_id, out_id = ctx.args(op, 3)
    x = ctx.float_tensor(x_id, op)
    ctx.float_tensor(out_id, op)
    check_rank(op, x.shape)
    perm = [normalize_dim(d, len(x.shape), op.name) for d in int_list_arg(ctx, dims_id, op)]
    if sorted(perm) != list(range(len(x.shape))):
        raise FormatError(f"{op.name}: {perm} is not a permutation of {len(x.shape)} dims",
                          field=ctx.where(op))
    _check_shape(ctx, op, out_id, [x.shape[p] for p in perm])
    if x.numel == 0:
        return
    out_shape, src_strides = permute_gather(x.shape, perm)
    if src_strides == contiguous_strides(out_shape):
        ctx.view(op, x_id, out_id)  # only size-1 dims moved: the bytes are in order
        return
    await gather(ctx, op, x_id, out_id, out_shape, src_strides)


@register("et_vk.prepack.default", half=True, reference=same_values, args=2,
          sizes=sizes.same_as_first)
async def build_prepack(ctx, op):
    src_id, out_id = ctx.args(op, 2)
    _reshape(ctx, op, src_id, out_id, ctx.tensor(src_id, op).shape)
