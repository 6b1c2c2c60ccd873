"""Resampling of the two trailing dims (shaders/upsample.wgsl), one output per invocation:
``aten.upsample_nearest2d.vec [self, output_size IntList|Null, scale_factors
DoubleList|Null, out]`` and ``aten.upsample_bilinear2d.vec [self, output_size|Null,
align_corners Bool, scale_factors|Null, out]`` (``F.interpolate`` and ``nn.Upsample``
give scale factors when they are passed, else the output size).

The source index is torch's CPU rule, in float32 as torch computes it (the host rounds
the scale the same way, the GPU does the one multiply, which IEEE rounds as the CPU):
``scale = 1 / scale_factor`` when a factor is given (> 0), else ``in / out``. Nearest:
an output size equal to the input copies, twice the input takes ``dst >> 1``, else
``min(floor(dst * scale), in - 1)``. Bilinear: an output size equal to the input copies;
else the source is ``scale * dst`` (align_corners, scale ``(in - 1) / (out - 1)``) or
``max(scale * (dst + 0.5) - 0.5, 0)``, between ``i0 = min(floor(src), in - 1)`` and
``i0 + 1`` (clamped) with weight ``l1 = clamp(src - i0, 0, 1)``.
"""

from __future__ import annotations

import math

from ..errors import FormatError, UnsupportedError
from ..model import f32
from ..model.graph import ListValue, Null
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from .args import bool_arg
from .common import elementwise_workgroup
from .exec_ints import dispatch_per_element
from .registry import define

COPY, HALF, SCALED = 0, 1, 2  # upsample.wgsl's index rules, per dim
NEAREST, BILINEAR = 0, 1

PARAMS = Uniform(("numel", "u32"), ("in_h", "u32"), ("in_w", "u32"), ("out_h", "u32"),
                 ("out_w", "u32"), ("rule_h", "u32"), ("rule_w", "u32"),
                 ("align", "u32"), ("scale_h", "f32"), ("scale_w", "f32"))
KERNEL = Kernel("upsample", (Binding(0, "x"), Binding(1, "y", "read_write")), PARAMS,
                snippets=("flat_index",),
                entries=(Entry("main", "upsample_item", "params.numel"),))


def _list_or_null(values, vid: int, name: str, kind: str, what: str):
    """A ``kind`` list argument's items (floats or ints), or None for Null."""
    v = values[vid]
    if isinstance(v, Null):
        return None
    if isinstance(v, ListValue) and v.kind == kind:
        return [(float if kind == "double_list" else int)(d) for d in v.items]
    raise FormatError(f"{name}: {what} should be a {kind} or Null, found {v.kind}")


def output_size(name: str, in_hw, sizes, scales) -> tuple[int, int]:
    """torch's compute_output_size: the given size, or trunc(in * factor) in double."""
    if (sizes is None) == (scales is None):
        raise FormatError(f"{name}: exactly one of output_size and scale_factors is given")
    if sizes is not None:
        if len(sizes) != 2 or min(sizes) < 1:
            raise FormatError(f"{name}: output_size {sizes} should be two positive ints")
        return sizes[0], sizes[1]
    if len(scales) != 2 or not all(s > 0 and math.isfinite(s) for s in scales):
        raise FormatError(f"{name}: scale_factors {scales} should be two positive numbers")
    return int(in_hw[0] * scales[0]), int(in_hw[1] * scales[1])


def nearest_rule(size: int, out: int, factor) -> tuple[int, float]:
    """(rule, float32 scale) of one dim of nearest."""
    if out == size:
        return COPY, 1.0
    if out == 2 * size:
        return HALF, 0.5
    return SCALED, _scale(size, out, factor)


def bilinear_rule(size: int, out: int, factor, align: bool) -> tuple[int, float]:
    if out == size:
        return COPY, 1.0
    if align:
        return SCALED, f32.to_f32((size - 1) / (out - 1)) if out > 1 else 0.0
    return SCALED, _scale(size, out, factor)


def _scale(size: int, out: int, factor) -> float:
    """torch's compute_scales_value<float>: 1 / factor rounded to float32, else in / out
    in float32 (both exact from the double quotient)."""
    if factor is not None and factor > 0:
        return f32.to_f32(1.0 / factor)
    return f32.to_f32(size / out)


def nearest_source(rule: int, scale: float, dst: int, size: int) -> int:
    if rule == COPY:
        return dst
    if rule == HALF:
        return dst >> 1
    return min(math.floor(f32.to_f32(dst * scale)), size - 1)  # f32 product, as the CPU


def bilinear_source(rule: int, scale: float, dst: int, size: int, align: bool):
    """(i0, i1, l0, l1) in float32 as torch: the two sources and their weights."""
    if rule == COPY:
        return dst, dst, 1.0, 0.0
    r = f32.to_f32
    src = r(scale * dst) if align else max(r(r(scale * r(dst + 0.5)) - 0.5), 0.0)
    i0 = min(math.floor(src), size - 1)
    l1 = min(max(r(src - i0), 0.0), 1.0)
    return i0, i0 + (1 if i0 < size - 1 else 0), r(1.0 - l1), l1


def _args(values, args, mode: int, name: str):
    """(output_size, align_corners, scale_factors) from the op's arguments."""
    sizes = _list_or_null(values, args[1], name, "int_list", "output_size")
    scales = args[2] if mode == NEAREST else args[3]
    align = mode == BILINEAR and bool(values[args[2]].value)
    return sizes, align, _list_or_null(values, scales, name, "double_list", "scale_factors")


async def _build(ctx, op, mode: int):
    x_id, out_id = op.args[0], op.args[-1]
    x, out = ctx.float_tensor(x_id, op), ctx.float_tensor(out_id, op)
    if mode == BILINEAR:
        bool_arg(ctx, op.args[2], op)  # a Bool, or a FormatError
    sizes, align, scales = _args(ctx.graph.values, op.args, mode, op.name)
    if len(x.shape) not in (3, 4):
        raise UnsupportedError(f"{op.name}: input of rank {len(x.shape)}; resampling takes "
                               "(C, H, W) or (N, C, H, W)")
    in_h, in_w = x.shape[-2:]
    out_h, out_w = output_size(op.name, (in_h, in_w), sizes, scales)
    want = tuple(x.shape[:-2]) + (out_h, out_w)
    if tuple(out.shape) != want:
        raise FormatError(f"{op.name}: output shape {list(out.shape)}, the arguments give "
                          f"{list(want)}", field=ctx.where(op))
    if out.numel == 0:
        return
    if x.numel == 0:
        raise UnsupportedError(f"{op.name}: resampling an empty input {list(x.shape)}")
    factors = scales or [None, None]
    if mode == NEAREST:
        (rh, sh), (rw, sw) = (nearest_rule(in_h, out_h, factors[0]),
                              nearest_rule(in_w, out_w, factors[1]))
    else:
        (rh, sh), (rw, sw) = (bilinear_rule(in_h, out_h, factors[0], align),
                              bilinear_rule(in_w, out_w, factors[1], align))
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg, "mode": mode}, half=ctx.half(x_id))
    params = PARAMS.pack(numel=out.numel, in_h=in_h, in_w=in_w, out_h=out_h, out_w=out_w,
                         rule_h=rh, rule_w=rw, align=int(align), scale_h=sh, scale_w=sw)
    dispatch_per_element(ctx, op, pipeline, [(0, x_id), (1, out_id),
                                             (2, ctx.uniform(params, f"{op.name} params"))],
                         out_id, wg)


async def build_nearest(ctx, op):
    ctx.args(op, 4)
    await _build(ctx, op, NEAREST)


async def build_bilinear(ctx, op):
    ctx.args(op, 5)
    await _build(ctx, op, BILINEAR)


def _reference(read, values, args, mode: int):
    name = "upsample_nearest2d" if mode == NEAREST else "upsample_bilinear2d"
    x = read(args[0])
    sizes, align, scales = _args(values, args, mode, name)
    in_h, in_w = x.shape[-2:]
    out_h, out_w = output_size(name, (in_h, in_w), sizes, scales)
    factors = scales or [None, None]
    planes = math.prod(x.shape[:-2])
    out = []
    if mode == NEAREST:
        rh, rw = nearest_rule(in_h, out_h, factors[0]), nearest_rule(in_w, out_w, factors[1])
        hs = [nearest_source(*rh, d, in_h) for d in range(out_h)]
        ws = [nearest_source(*rw, d, in_w) for d in range(out_w)]
        for p in range(planes):
            base = p * in_h * in_w
            out += [x.values[base + h * in_w + w] for h in hs for w in ws]
        return out
    rh = bilinear_rule(in_h, out_h, factors[0], align)
    rw = bilinear_rule(in_w, out_w, factors[1], align)
    hs = [bilinear_source(*rh, d, in_h, align) for d in range(out_h)]
    ws = [bilinear_source(*rw, d, in_w, align) for d in range(out_w)]
    for p in range(planes):
        v, base = x.values, p * in_h * in_w
        for h0, h1, a0, a1 in hs:
            for w0, w1, b0, b1 in ws:
                top = v[base + h0 * in_w + w0] * b0 + v[base + h0 * in_w + w1] * b1
                bottom = v[base + h1 * in_w + w0] * b0 + v[base + h1 * in_w + w1] * b1
                out.append(top * a0 + bottom * a1)
    return out


def _sizes(op, shape, integer, values):
    mode = BILINEAR if len(op.args) == 5 else NEAREST
    sizes, _, scales = _args(values, op.args, mode, op.name)
    s = shape(op.args[0])
    return {op.args[-1]: tuple(s[:-2]) + output_size(op.name, s[-2:], sizes, scales)}


define("aten.upsample_nearest2d.vec", build_nearest,
       lambda read, values, args: _reference(read, values, args, NEAREST), 4, half=True,
       sizes=_sizes)
define("aten.upsample_bilinear2d.vec", build_bilinear,
       lambda read, values, args: _reference(read, values, args, BILINEAR), 5, half=True,
       sizes=_sizes)
