"""Element moves through strides (copying.py's strided_copy, shaders/strided_copy.wgsl):
``aten.flip.default [self, dims, out]`` (a flipped dim reads backwards: a negative
stride, wrapping in u32), ``aten.repeat.default [self, repeats, out]`` (out seen as
(repeat, size) pairs per dim, the repeat read with stride 0: leading repeats add dims),
``aten.split_with_sizes_copy.default [self, split_sizes, dim, outs: ValueList]``,
``aten.split_copy.Tensor [self, split_size, dim, outs]`` and ``aten.unbind_copy.int
[self, dim, outs]`` (each out a slice at its offset). Floats and 4-byte words alike.
"""

from __future__ import annotations


from ..errors import FormatError, UnsupportedError
from ..model.graph import ListValue
from . import cpu_reference as cpu
from .args import int_list, number
from .common import MAX_RANK, check_rank, contiguous_strides, normalize_dim
from .copying import strided_copy
from .registry import define

WRAP = 1 << 32  # strides are u32 in the kernel: a negative one wraps, and so do the sums


def _dims(values, vid, rank: int, name: str) -> list[int]:
    dims = [normalize_dim(d, rank, name) for d in int_list(values[vid]) or []]
    if len(set(dims)) != len(dims):
        raise FormatError(f"{name}: dim repeated in {dims}")
    return dims


def flip_layout(shape, dims) -> tuple[int, list[int]]:
    """(source offset, source strides) that read ``shape`` flipped along ``dims``."""
    strides = contiguous_strides(shape)
    offset = sum((shape[d] - 1) * strides[d] for d in dims if shape[d])
    return offset, [-t if d in dims else t for d, t in enumerate(strides)]


async def build_flip(ctx, op):
    x_id, dims_id, out_id = ctx.args(op, 3)
    x, out = ctx.tensor(x_id, op), ctx.tensor(out_id, op)
    if tuple(out.shape) != tuple(x.shape):
        raise FormatError(f"{op.name}: output {list(out.shape)} differs from input "
                          f"{list(x.shape)}", field=ctx.where(op))
    offset, strides = flip_layout(x.shape, _dims(ctx.graph.values, dims_id, len(x.shape),
                                                 op.name))
    await strided_copy(ctx, op, x_id, out_id, x.shape, [s % WRAP for s in strides],
                       contiguous_strides(x.shape), src_offset=offset)


def reference_flip(read, values, args):
    x = read(args[0])
    offset, strides = flip_layout(x.shape, _dims(values, args[1], len(x.shape), "flip"))
    return [x.values[offset + i] for i in cpu.strided_index(x.shape, strides)]


def repeat_layout(shape, repeats, name: str) -> tuple[list[int], list[int]]:
    """(shape, source strides) of ``repeat`` as a broadcast: out viewed as (repeat, size)
    pairs, size-1 entries dropped."""
    if len(repeats) < len(shape) or any(r < 0 for r in repeats):
        raise FormatError(f"{name}: repeats {repeats} do not fit a rank-{len(shape)} input")
    padded = (1,) * (len(repeats) - len(shape)) + tuple(shape)
    pairs = []
    for r, s, t in zip(repeats, padded, contiguous_strides(padded)):
        pairs += [(r, 0), (s, t)]
    kept = [(s, t) for s, t in pairs if s != 1] or [(1, 0)]
    return [s for s, _ in kept], [t for _, t in kept]


async def build_repeat(ctx, op):
    x_id, repeats_id, out_id = ctx.args(op, 3)
    x, out = ctx.tensor(x_id, op), ctx.tensor(out_id, op)
    repeats = int_list(ctx.graph.values[repeats_id]) or []
    shape, strides = repeat_layout(x.shape, repeats, op.name)
    padded = (1,) * (len(repeats) - len(x.shape)) + tuple(x.shape)
    want = tuple(r * s for r, s in zip(repeats, padded))
    if tuple(out.shape) != want:
        raise FormatError(f"{op.name}: output {list(out.shape)}, expected {list(want)}",
                          field=ctx.where(op))
    if len(shape) > MAX_RANK:
        raise UnsupportedError(f"{op.name}: repeats {repeats} of {list(x.shape)} need "
                               f"{len(shape)} dims; at most {MAX_RANK} ({ctx.where(op)})")
    await strided_copy(ctx, op, x_id, out_id, shape, strides, contiguous_strides(shape))


def reference_repeat(read, values, args):
    x = read(args[0])
    shape, strides = repeat_layout(x.shape, int_list(values[args[1]]) or [], "repeat")
    return [x.values[i] for i in cpu.strided_index(shape, strides)]


def _split_sizes(op_name: str, values, args, shape) -> tuple[int, list[int]]:
    """(dim, the size of each part along it) of the split ops."""
    rank = len(shape)
    if op_name == "aten.unbind_copy.int":
        dim = normalize_dim(int(number(values[args[1]])), rank, op_name)
        return dim, [1] * shape[dim]
    dim = normalize_dim(int(number(values[args[2]])), rank, op_name)
    if op_name == "aten.split_copy.Tensor":
        step = int(number(values[args[1]]))
        if step <= 0 and shape[dim]:
            raise FormatError(f"{op_name}: split_size {step} must be positive")
        sizes = [min(step, shape[dim] - at) for at in range(0, shape[dim], step)] if step \
            else [0]
    else:
        sizes = int_list(values[args[1]]) or []
    if sum(sizes) != shape[dim] or any(s < 0 for s in sizes):
        raise FormatError(f"{op_name}: sizes {sizes} do not add up to {shape[dim]} along "
                          f"dim {dim}")
    return dim, sizes


def _parts(op, values, where):
    outs = values[op.args[-1]]
    if not isinstance(outs, ListValue) or outs.kind != "value_list":
        raise FormatError(f"{op.name}: the output should be a ValueList", field=where)
    return list(outs.items)


async def build_split(ctx, op):
    x_id = op.args[0]
    x = ctx.tensor(x_id, op)
    check_rank(op, x.shape)
    try:
        dim, sizes = _split_sizes(op.name, ctx.graph.values, op.args, x.shape)
    except FormatError as e:
        raise FormatError(str(e), field=ctx.where(op)) from None
    outs = _parts(op, ctx.graph.values, ctx.where(op))
    if len(outs) != len(sizes):
        raise FormatError(f"{op.name}: {len(outs)} outputs for {len(sizes)} parts",
                          field=ctx.where(op))
    strides, at = contiguous_strides(x.shape), 0
    for out_id, size in zip(outs, sizes):
        shape = list(x.shape)
        shape[dim] = size
        out = ctx.tensor(out_id, op)
        squeezed = shape[:dim] + shape[dim + 1:]
        if list(out.shape) != (squeezed if op.name == "aten.unbind_copy.int" else shape):
            raise FormatError(f"{op.name}: output {list(out.shape)}, expected {shape}",
                              field=ctx.where(op))
        await strided_copy(ctx, op, x_id, out_id, shape, strides, contiguous_strides(shape),
                           src_offset=at * strides[dim])
        at += size


def reference_split(op_name: str):
    def fn(read, values, args):
        x = read(args[0])
        dim, sizes = _split_sizes(op_name, values, args, x.shape)
        strides, at, parts = contiguous_strides(x.shape), 0, []
        for size in sizes:
            shape = list(x.shape)
            shape[dim] = size
            base = at * strides[dim]
            parts.append([x.values[base + i] for i in cpu.strided_index(shape, strides)])
            at += size
        return parts
    return fn


define("aten.flip.default", build_flip, reference_flip, 3, half=True)
define("aten.repeat.default", build_repeat, reference_repeat, 3, half=True)
for _name, _count in (("aten.split_with_sizes_copy.default", 4), ("aten.split_copy.Tensor", 4),
                      ("aten.unbind_copy.int", 3)):
    define(_name, build_split, reference_split(_name), _count, half=True)
