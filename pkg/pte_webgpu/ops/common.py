"""Helpers the op families share: dim normalisation, index math, powers of two,
workgroup sizes and the uniform layout of shapes/strides (``array<vec4<u32>, 2>`` in
WGSL), the float-and-word kernel pair. Scalar arguments are read by ops/args.py."""

from __future__ import annotations


from ..errors import FormatError, UnsupportedError
from ..shaders.compose import Kernel, alias

MAX_RANK = 8
ELEMENTWISE_WG = 256  # one invocation per element


def float_and_word_kernels(body: str, bindings, params, **kw) -> tuple[Kernel, Kernel]:
    """Two kernels of one body that moves elements as ``word``: the float one (``elem``,
    with its f16 form) and the 4-byte one (``u32``: int32, int64 held as int32, bool),
    which moves bits and never passes them through a float."""
    return (Kernel(body, bindings, params, generated=alias("word", "elem"), **kw),
            Kernel(body, bindings, params, generated=alias("word", "u32"), half=False,
                   name=f"{body}_u32", **kw))


def contiguous_strides(shape) -> list[int]:
    """Element strides of a row-major tensor."""
    strides, step = [0] * len(shape), 1
    for d in range(len(shape) - 1, -1, -1):
        strides[d] = step
        step *= shape[d]
    return strides


def normalize_dim(dim: int, rank: int, name: str) -> int:
    """``dim`` in ``[-rank, rank)`` to ``[0, rank)`` (a 0-d tensor accepts 0 and -1)."""
    span = max(rank, 1)
    if not -span <= dim < span:
        raise FormatError(f"{name}: dim {dim} is out of range for rank {rank}")
    return dim % span


def normalize_dims(dims, rank: int, name: str) -> list[int]:
    """Sorted distinct dims; repeats are an error, as in torch."""
    out = [normalize_dim(d, rank, name) for d in dims]
    if len(set(out)) != len(out):
        raise FormatError(f"{name}: dims {list(dims)} repeat a dimension")
    return sorted(out)


def elementwise_workgroup(ctx) -> int:
    return min(ELEMENTWISE_WG, ctx.device.info.traits.max_invocations)


def pow2_workgroup(ctx, want: int, cap: int = 256) -> int:
    """Workgroup size of a tree reduction over ``want`` items on this adapter."""
    return pow2_lanes(ctx.device.info.traits, want, cap)


def pow2_lanes(traits, want: int, cap: int = 256) -> int:
    """``pow2_workgroup`` on an adapter's traits."""
    return pow2_size(min(cap, traits.max_invocations), want)


def pow2_size(limit: int, want: int) -> int:
    """The smallest power of two >= ``want``, but at most the largest one <= ``limit``."""
    size = 1 << (max(1, want) - 1).bit_length()
    return min(size, floor_pow2(limit))


def is_pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def floor_pow2(n: int) -> int:
    """The largest power of two <= ``n`` (1 for n < 2)."""
    return 1 << (max(1, n).bit_length() - 1)


def check_rank(op, shape) -> None:
    if len(shape) > MAX_RANK:
        raise UnsupportedError(f"{op.name}: rank {len(shape)} exceeds {MAX_RANK}")


def same_numel(ctx, op, a_id: int, out_id: int) -> None:
    a, out = ctx.graph.values[a_id], ctx.graph.values[out_id]
    if a.numel != out.numel:
        raise FormatError(f"{op.name}: output has {out.numel} elements, input {a.numel}",
                          field=ctx.where(op))


def merge_consts(merge: tuple) -> str:
    """The WGSL consts of snippets.wgsl attention_merge for a split attention's (heads,
    head dim, parts) (ops/attention_merge.py)."""
    heads, dim, parts = merge
    return f"const merge_heads = {heads}u;\nconst merge_dim = {dim}u;\nconst merge_parts = {parts}u;\n"
