"""``aten.grid_sampler_2d.default [input (N, C, H, W), grid (N, Ho, Wo, 2),
interpolation_mode, padding_mode, align_corners, out (N, C, Ho, Wo)]``
(shaders/grid_sample.wgsl), one output per invocation.

ExecuTorch 1.5.1's Vulkan partitioner does not delegate it: ``F.grid_sample`` runs as the
plan kernel ``aten::grid_sampler_2d.out`` (the same arguments), through this definition.
Modes: 0 bilinear, 1 nearest (bicubic, 2, is refused); padding: 0 zeros, 1 border,
2 reflection. The coordinates follow torch's CPU kernel in float32: ``x`` unnormalized to
``(x + 1) * (W - 1) / 2`` (align_corners) or ``(x + 1) * W / 2 - 0.5``; border clips to
``[0, W - 1]``; reflection folds about the pixel corners (centres with align_corners)
by ``min(extra, 2 span - extra)`` and clips. Bilinear weights the four neighbours of
``floor(x)``, a neighbour outside the input reading 0; nearest takes ``round`` (half to
even), 0 outside. Where a coordinate is still NaN or infinite after the padding rule
(a NaN grid value; inf with zeros or reflection), the output is 0: torch leaves that case
to its float-to-int conversion (a masked read at INT_MIN; out of bounds for reflection).
"""

from __future__ import annotations

import math

from ..errors import FormatError, UnsupportedError
from ..model import f32
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from .args import bool_arg, int_arg
from .common import elementwise_workgroup
from .registry import define

BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2

PARAMS = Uniform(("numel", "u32"), ("channels", "u32"), ("in_h", "u32"), ("in_w", "u32"),
                 ("out_h", "u32"), ("out_w", "u32"))
KERNEL = Kernel("grid_sample", (Binding(0, "x"), Binding(1, "grid"),
                                Binding(2, "y", "read_write")), PARAMS,
                snippets=("bits", "flat_index"),
                entries=(Entry("main", "sample_item", "params.numel"),))


def _check(name: str, x_shape, g_shape, out_shape, mode: int, padding: int, where=None):
    if mode == BICUBIC:
        raise UnsupportedError(f"{name}: bicubic interpolation (mode 2) is not supported")
    if mode not in (BILINEAR, NEAREST):
        raise FormatError(f"{name}: interpolation_mode {mode} (0 bilinear, 1 nearest, "
                          "2 bicubic)", field=where)
    if padding not in (ZEROS, BORDER, REFLECTION):
        raise FormatError(f"{name}: padding_mode {padding} (0 zeros, 1 border, 2 reflection)",
                          field=where)
    if len(x_shape) != 4 or len(g_shape) != 4 or g_shape[3] != 2 or g_shape[0] != x_shape[0]:
        raise FormatError(f"{name}: input {list(x_shape)} and grid {list(g_shape)} should be "
                          "(N, C, H, W) and (N, Ho, Wo, 2)", field=where)
    want = (x_shape[0], x_shape[1], g_shape[1], g_shape[2])
    if tuple(out_shape) != want:
        raise FormatError(f"{name}: output shape {list(out_shape)}, expected {list(want)}",
                          field=where)


async def build(ctx, op):
    x_id, g_id, mode_id, pad_id, align_id, out_id = ctx.args(op, 6)
    x, grid, out = (ctx.float_tensor(v, op) for v in (x_id, g_id, out_id))
    mode, padding = int_arg(ctx, mode_id, op), int_arg(ctx, pad_id, op)
    align = bool_arg(ctx, align_id, op)
    _check(op.name, x.shape, grid.shape, out.shape, mode, padding, ctx.where(op))
    if ctx.half(x_id) != ctx.half(g_id):
        raise UnsupportedError(f"{op.name}: input and grid of different float types")
    if out.numel == 0:
        return
    if x.numel == 0:
        raise UnsupportedError(f"{op.name}: sampling an empty input {list(x.shape)}")
    n, c, h, w = x.shape
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg, "mode": mode, "padding": padding,
                                           "align": int(align)}, half=ctx.half(x_id))
    params = PARAMS.pack(numel=out.numel, channels=c, in_h=h, in_w=w, out_h=out.shape[2],
                         out_w=out.shape[3])
    ctx.dispatch(op, pipeline, [(0, x_id), (1, g_id), (2, out_id),
                                (3, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-out.numel // wg)))


# --- CPU reference: torch's vectorized CPU kernel, each float32 step rounded ----------

def source_coordinate(v: float, size: int, padding: int, align: bool) -> float:
    r = f32.to_f32
    if align:
        x = r(r(v + 1.0) * r((size - 1) / 2))
    else:
        x = r(r(r(v + 1.0) * r(size / 2)) - 0.5)
    if padding == ZEROS:
        return x
    if padding == REFLECTION:
        low = 0.0 if align else -0.5
        span2 = r(2.0 * (size - 1)) if align else r(2.0 * size)
        if align and size <= 1:
            x = 0.0
        else:
            a = abs(r(x - low))
            flips = math.trunc(r(a / span2)) if math.isfinite(a) else a
            extra = r(a - r(flips * span2))
            x = r(min(extra, r(span2 - extra)) + low)
    return x if x != x else min(float(size - 1), max(x, 0.0))  # NaN stays NaN


def reference(read, values, args):
    x, grid = read(args[0]), read(args[1])
    mode, padding = int(values[args[2]].value), int(values[args[3]].value)
    align = bool(values[args[4]].value)
    n, c, h, w = x.shape
    ho, wo = grid.shape[1:3]
    _check("grid_sampler_2d", x.shape, grid.shape, (n, c, ho, wo), mode, padding)
    out = [0.0] * (n * c * ho * wo)
    v = x.values
    r = f32.to_f32
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                gi = ((b * ho + i) * wo + j) * 2
                sx = source_coordinate(grid.values[gi], w, padding, align)
                sy = source_coordinate(grid.values[gi + 1], h, padding, align)
                if not (math.isfinite(sx) and math.isfinite(sy)):
                    continue  # reads 0
                for ch in range(c):
                    base = (b * c + ch) * h * w

                    def at(yy, xx):
                        ok = 0 <= yy < h and 0 <= xx < w
                        return v[base + yy * w + xx] if ok else 0.0
                    o = ((b * c + ch) * ho + i) * wo + j
                    if mode == NEAREST:
                        out[o] = at(round(sy), round(sx))  # Python rounds half to even
                        continue
                    x0, y0 = math.floor(sx), math.floor(sy)
                    we, ns = r(sx - x0), r(sy - y0)
                    ea, so = r(1.0 - we), r(1.0 - ns)
                    out[o] = (at(y0, x0) * r(so * ea) + at(y0, x0 + 1) * r(so * we)
                              + at(y0 + 1, x0) * r(ns * ea) + at(y0 + 1, x0 + 1) * r(ns * we))
    return out


define("aten.grid_sampler_2d.default", build, reference, 6, half=True)
