"""Matrix products (matmul.wgsl): ``aten.linear.default [input, weight, bias|Null, out]``.

input ``[..., K]`` (leading dims flattened into M), weight ``[N, K]``, bias ``[N]``;
out ``[..., N]`` = input · weightᵀ + bias, computed in tiles of (4·tw)² outputs, or one dot
product per output on CPU adapters (``VARIANTS``).
"""

from __future__ import annotations

import math
import operator
from math import prod

from ..errors import FormatError
from ..graph import Null
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from .common import elementwise_workgroup
from . import sizes
from .registry import define
from .variants import declare

MAX_THREADS_PER_SIDE = 8  # 8 x 8 invocations, 32 x 32 outputs per workgroup
# Tiles with workgroup memory on GPUs; on CPU adapters, where a barrier costs more than
# the reuse, one dot product per output.
VARIANTS = declare("matmul", ("tiled", "dot"), doc="tiled: 32x32 output tiles; dot: one "
                   "dot product per output")

PARAMS = Uniform(("m", "u32"), ("n", "u32"), ("k", "u32"), ("has_bias", "u32"),
                 ("tiles_n", "u32"),  # tiles across N
                 ("tiles", "u32"))  # tiles in all
# Without a bias the weight stands in for binding 4; the shader never reads it.
KERNEL = Kernel("matmul", (Binding(0, "input"), Binding(1, "weight"),
                           Binding(2, "out", "read_write"), Binding(4, "bias")), PARAMS,
                uniform_binding=3, entries=(Entry("dot", "dot_item", "params.m * params.n"),))


def threads_per_side(max_invocations: int) -> int:
    """The largest power of two t <= 8 with t * t invocations within the adapter's limit."""
    t = MAX_THREADS_PER_SIDE
    while t > 1 and t * t > max_invocations:
        t //= 2
    return t


def tile_counts(m: int, n: int, tile: int) -> tuple[int, int]:
    """(tiles across N, tiles in all) for an M x N output in tile x tile blocks."""
    tiles_n = -(-n // tile)
    return tiles_n, tiles_n * -(-m // tile)


def linear_dims(in_shape, w_shape, out_shape, name: str) -> tuple[int, int, int]:
    """(M, N, K) of a linear; FormatError when the shapes disagree."""
    if not in_shape or len(w_shape) != 2:
        raise FormatError(f"{name}: input {list(in_shape)} and weight {list(w_shape)} must "
                          "be [..., K] and [N, K]")
    (n, k), lead = w_shape, tuple(in_shape[:-1])
    if in_shape[-1] != k or tuple(out_shape) != lead + (n,):
        raise FormatError(f"{name}: input {list(in_shape)}, weight {list(w_shape)} and "
                          f"output {list(out_shape)} do not match (out = [..., N])")
    return prod(lead), n, k


async def build_linear(ctx, op):
    x_id, w_id, b_id, out_id = ctx.args(op, 4)
    x, w, out = (ctx.float_tensor(i, op) for i in (x_id, w_id, out_id))
    m, n, k = linear_dims(x.shape, w.shape, out.shape, op.name)
    has_bias = not isinstance(ctx.graph.values[b_id], Null)
    if has_bias:
        b = ctx.float_tensor(b_id, op)
        if b.numel != n:
            raise FormatError(f"{op.name}: bias shape {list(b.shape)}, expected [{n}]",
                              field=ctx.where(op))
    if m * n == 0:
        return
    traits = ctx.device.info.traits
    variant = VARIANTS.pick(ctx, op, lambda: "dot" if traits.is_cpu else "tiled")
    t = threads_per_side(traits.max_invocations)
    tiles_n, tiles = tile_counts(m, n, 4 * t)
    params = PARAMS.pack(m=m, n=n, k=k, has_bias=int(has_bias), tiles_n=tiles_n, tiles=tiles)
    uniform = ctx.uniform(params, f"{op.name} params")
    if variant == "dot":
        wg = elementwise_workgroup(ctx)
        pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, "dot", half=ctx.half(out_id))
        grid = ctx.grid(-(-m * n // wg))
    else:
        pipeline = await ctx.pipeline(KERNEL, {"tw": t}, half=ctx.half(out_id))
        grid = ctx.grid(tiles)
    # Without a bias the weight stands in for binding 4; the shader never reads it.
    ctx.dispatch(op, pipeline, [(0, x_id), (1, w_id), (2, out_id), (3, uniform),
                                (4, b_id if has_bias else w_id)], grid)


def reference(read, values, args):
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


define("aten.linear.default", build_linear, reference, 4, half=True, sizes=sizes.linear)
