"""Convolutions: ``aten.convolution.default [input, weight, bias|Null, stride, padding,
dilation, transposed, output_padding, groups, out]`` and ``et_vk.conv_with_clamp.default``
(the same and ``output_min, output_max`` before out: the Vulkan partitioner's conv + relu
or hardtanh). Also the plan kernel ``aten::convolution.out`` (batch > 1, transposed 1-D:
what the partitioner leaves out).

NCHW contiguous tensors: 2-D input [N, Cin, H, W], weight [Cout, Cin/groups, kh, kw]
(transposed: [Cin, Cout/groups, kh, kw]), out [N, Cout, OH, OW]; 1-D ones ([N, C, L],
one-item lists) run as 2-D with H = kh = 1. The list arguments hold one value per
spatial dim. f32 accumulation in every form (float16 tensors stored as f16); bias and
clamp in the epilogue (bounds beyond float32 are +-inf: relu's upper bound is the
largest double). A family of kernels (ops/conv_choice.py): direct and depthwise
(shaders/conv.wgsl), implicit GEMM tiles (shaders/conv_gemm.wgsl), 1x1 through the
matmul family (shaders/conv_pointwise.wgsl transposes the activation first).
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from ..errors import FormatError, UnsupportedError
from ..model.f32 import to_f32
from ..model.graph import Null
from ..model import dtypes
from ..shaders.compose import Binding, Entry, Kernel, Uniform, fill, sections
from . import matmul, matmul_choice, split_k
from .args import bool_arg, int_arg, int_list, int_list_arg, scalar_value
from .common import elementwise_workgroup
from .conv_choice import VARIANTS, Variant
from .registry import define

PARAMS = Uniform(
    ("batch", "u32"), ("cin", "u32"), ("h", "u32"), ("w", "u32"),
    ("cout", "u32"), ("oh", "u32"), ("ow", "u32"), ("kh", "u32"),
    ("kw", "u32"), ("sy", "u32"), ("sx", "u32"), ("py", "u32"),
    ("px", "u32"), ("dy", "u32"), ("dx", "u32"), ("cin_g", "u32"),
    ("cout_g", "u32"), ("has_bias", "u32"), ("numel", "u32"), ("k", "u32"),
    ("lo", "f32"), ("hi", "f32"),  # clamp bounds (+-inf: none)
    ("groups", "u32"), ("tiles_n", "u32"), ("tiles", "u32"),  # gemm: tiles per item, group
    ("splits", "u32"), ("k_span", "u32"),  # gemm: K splits and the K of each
    ("has_resid", "u32"))  # pte_webgpu.conv_residual: out = clamp(resid + conv)
# Binding 5: split K's partial sums (f32, ops/split_k.py); 6: the gemm's taps (k's offset, dy ky, dx kx);
# 7: the residual added before the clamp (every store through conv_parts' `finish`).
_BINDINGS = (Binding(0, "x"), Binding(1, "weight"), Binding(2, "out", "read_write"),
             Binding(3, "bias"), Binding(5, "kparts", "read_write", "f32"), Binding(7, "resid"))
_CLAMP = ("bits", "nan_minmax")  # clamp_f32: on the bits, as GPUs' max/min drop NaN
DIRECT = Kernel("conv", _BINDINGS, PARAMS, uniform_binding=4, snippets=_CLAMP + ("split_k_sum",),
                generated=sections("conv_parts")["finish"],
                entries=(Entry("direct", "direct_item", "params.numel"),
                         Entry("transposed", "transposed_item", "params.numel"),
                         Entry("depthwise", "depthwise_item", "params.numel"),
                         Entry("split_sum", "split_item", "params.numel")))
GEMM = {(vec, split): Kernel(
    "conv_gemm", _BINDINGS + (Binding(1, "weight4", type="elem4"),
                              Binding(6, "taps", type="vec4<i32>")), PARAMS, uniform_binding=4,
    snippets=_CLAMP,
    generated=fill("conv_parts", "stage_w", form="vec4" if vec else "scalar")
    + ("" if split else sections("conv_parts")["finish"])
    + sections("conv_parts")["put_part" if split else "put_out"]
    + sections("matmul_parts")["fma_8x8"],  # the mm4 tiles' register block
    name="conv_gemm" + ("_vec4" if vec else "") + ("_split" if split else ""))
    for vec in (False, True) for split in (False, True)}
TRANSPOSE = Kernel("conv_pointwise", (Binding(0, "x"), Binding(1, "xt", "read_write")),
                   Uniform(("numel", "u32"), ("rows", "u32"), ("cols", "u32")),
                   entries=(Entry("main", "transpose_item", "params.numel"),))


@dataclass(frozen=True)
class Conv:
    """One convolution's sizes, every spatial pair (y, x); 1-D ones with y = unit."""
    batch: int
    cin: int
    h: int
    w: int
    cout: int
    oh: int
    ow: int
    kh: int
    kw: int
    stride: tuple
    padding: tuple
    dilation: tuple
    groups: int
    transposed: bool

    @property
    def k(self) -> int:
        return self.kh * self.kw

    def shape(self, half: bool = False) -> dict:
        """The conv family's shape keywords (ops/conv_choice.py)."""
        pointwise = (self.k == 1 and self.stride == (1, 1) and self.padding == (0, 0))
        return dict(cin=self.cin, cout=self.cout, groups=self.groups, k=self.k,
                    pixels=self.oh * self.ow, batch=self.batch, pointwise=pointwise,
                    transposed=self.transposed, half=half)

    def params(self, lo: float, hi: float, has_bias: bool, **extra) -> bytes:
        return PARAMS.pack(
            batch=self.batch, cin=self.cin, h=self.h, w=self.w, cout=self.cout, oh=self.oh,
            ow=self.ow, kh=self.kh, kw=self.kw, sy=self.stride[0], sx=self.stride[1],
            py=self.padding[0], px=self.padding[1], dy=self.dilation[0],
            dx=self.dilation[1], cin_g=self.cin // self.groups,
            cout_g=self.cout // self.groups, has_bias=int(has_bias),
            numel=self.batch * self.cout * self.oh * self.ow,
            k=self.cin // self.groups * self.k, lo=lo, hi=hi, groups=self.groups, **extra)


def conv_dims(x, w, out, bias, stride, padding, dilation, transposed, output_padding,
              groups, name: str) -> Conv:
    """The Conv of these shapes and arguments; FormatError when they disagree."""
    rank = len(x)
    spatial = rank - 2
    if rank not in (3, 4) or len(w) != rank or len(out) != rank:
        raise FormatError(f"{name}: input {list(x)}, weight {list(w)} and output {list(out)} "
                          "must be [N, C, L] or [N, C, H, W] alike")
    lists = {"stride": stride, "padding": padding, "dilation": dilation,
             "output_padding": output_padding}
    for what, v in lists.items():
        if len(v) == 1 and spatial == 2:
            lists[what] = v = list(v) * 2
        if len(v) != spatial:
            raise FormatError(f"{name}: {what} {list(v)} needs {spatial} values")
    stride, padding, dilation, output_padding = (lists[k] for k in lists)
    if min(stride) < 1 or min(dilation) < 1 or min(padding) < 0 or min(output_padding) < 0:
        raise FormatError(f"{name}: stride {stride} and dilation {dilation} must be >= 1, "
                          f"padding {padding} and output_padding {output_padding} >= 0")
    if groups < 1 or x[1] % groups:
        raise FormatError(f"{name}: groups {groups} does not divide Cin {x[1]}")
    if transposed:
        cout = w[1] * groups
        if w[0] != x[1]:
            raise FormatError(f"{name}: transposed weight {list(w)} needs {x[1]} rows (Cin)")
        if any(p >= max(s, d) for p, s, d in zip(output_padding, stride, dilation)):
            raise FormatError(f"{name}: output_padding {output_padding} must be smaller "
                              f"than stride {stride} or dilation {dilation}")
    else:
        cout = w[0]
        if w[1] * groups != x[1] or cout % groups:
            raise FormatError(f"{name}: weight {list(w)} does not fit Cin {x[1]} in "
                              f"{groups} groups")
        if any(p for p in output_padding):
            raise FormatError(f"{name}: output_padding {output_padding} without transposed")
    sizes = []
    for i in range(spatial):
        size, k = x[2 + i], w[2 + i]
        if transposed:
            sizes.append((size - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k - 1)
                         + output_padding[i] + 1)
        else:
            sizes.append((size + 2 * padding[i] - dilation[i] * (k - 1) - 1) // stride[i] + 1)
    if tuple(out) != (x[0], cout, *sizes) or min(sizes) < 1:
        raise FormatError(f"{name}: output {list(out)}, expected {[x[0], cout, *sizes]}")
    if bias is not None and tuple(bias) != (cout,):
        raise FormatError(f"{name}: bias {list(bias)}, expected [{cout}]")

    def pair(v, unit):
        return tuple(v) if spatial == 2 else (unit, v[0])
    h, kh, oh = (x[2], w[2], out[2]) if spatial == 2 else (1, 1, 1)
    return Conv(x[0], x[1], h, x[-1], cout, oh, out[-1], kh, w[-1], pair(stride, 1),
                pair(padding, 0), pair(dilation, 1), groups, transposed)


def clamp_bounds(low, high) -> tuple[float, float]:
    """conv_with_clamp's bounds as float32 (None: unbounded; beyond the range: +-inf, as a
    double cast to float: relu's bound is sys.float_info.max)."""
    return (-math.inf if low is None else to_f32(low), math.inf if high is None else to_f32(high))


# --- build ---------------------------------------------------------------------------
RESIDUAL = "pte_webgpu.conv_residual"  # runtime/fusion_conv.py: conv, add.Tensor, clamp
# op -> its argument count, out included: the conv's 9, then [resid], [lo, hi], out
ARGS = {"aten.convolution.default": 10, "et_vk.conv_with_clamp.default": 12, RESIDUAL: 13}


async def build(ctx, op):
    n_args = ARGS[op.name]
    clamp = n_args >= 12
    args = ctx.args(op, n_args)
    x_id, w_id, b_id, out_id = args[0], args[1], args[2], args[-1]
    x, w, out = (ctx.float_tensor(i, op) for i in (x_id, w_id, out_id))
    bias = None if isinstance(ctx.graph.values[b_id], Null) else ctx.float_tensor(b_id, op)
    lists = [int_list_arg(ctx, args[i], op) for i in (3, 4, 5, 7)]
    transposed, groups = bool_arg(ctx, args[6], op), int_arg(ctx, args[8], op)
    try:
        c = conv_dims(x.shape, w.shape, out.shape, bias and bias.shape, *lists[:3],
                      transposed, lists[3], groups, op.name)
    except FormatError as e:
        raise FormatError(str(e), field=ctx.where(op)) from None
    lo, hi = -math.inf, math.inf
    if clamp:
        where = ctx.where(op)
        lo, hi = clamp_bounds(*(scalar_value(ctx.graph.values, args[i], where, optional=True)
                                for i in (-3, -2)))
    if out.numel == 0:
        return
    half = ctx.half(out_id)
    v = VARIANTS.pick(ctx, op, **c.shape(half))
    bias_vid = b_id if bias is not None else w_id  # unread without a bias
    ids = {0: x_id, 1: w_id, 2: out_id, 3: bias_vid}
    if n_args == 13:
        resid = ctx.float_tensor(args[9], op)
        if (tuple(resid.shape), resid.dtype) != (tuple(out.shape), out.dtype):
            raise FormatError(f"{op.name}: residual {list(resid.shape)} {resid.dtype.name} "
                              f"must match the output {list(out.shape)} {out.dtype.name}",
                              field=ctx.where(op))
        ids[7] = args[9]
    await record(ctx, op, v, c, ids, bias is not None, lo, hi, half)


async def record(ctx, op, v: Variant, c: Conv, ids: dict, has_bias: bool, lo: float,
                 hi: float, half: bool) -> None:
    """Record convolution ``c`` as variant ``v``: ``ids`` maps 0 input, 1 weight, 2 out,
    3 bias and, where one is added, 7 residual to value ids or buffers. Also used by
    bench/."""
    if v.kind == "matmul":
        return await _pointwise(ctx, op, c, ids, has_bias, lo, hi, half)
    has_resid = int(7 in ids)
    # without a residual the input stands in for binding 7; finish never reads it
    bindings = [(b, ids[b]) for b in range(4)] + [(7, ids.get(7, ids[0]))]
    wg = elementwise_workgroup(ctx)
    numel = c.batch * c.cout * c.oh * c.ow
    if v.kind != "gemm":
        entry = "transposed" if c.transposed else v.kind
        pipeline = await ctx.pipeline(DIRECT, {"wg_size": wg}, entry, half)
        uniform = ctx.uniform(c.params(lo, hi, has_bias, has_resid=has_resid),
                              f"{op.name} params")
        ctx.dispatch(op, pipeline, bindings + [(4, uniform)], ctx.grid(-(-numel // wg)))
        return
    rows, pixels, k = c.cout // c.groups, c.oh * c.ow, c.cin // c.groups * c.k
    tile = 8 * v.tw
    tiles_n = -(-pixels // tile)
    tiles = tiles_n * -(-rows // tile)
    splits, span = split_k.spans(k, v.splits, v.tk)
    split = splits > 1
    pipeline = await ctx.pipeline(GEMM[v.vec4, split], {"tw": v.tw, "tk": v.tk}, "main", half)
    uniform = ctx.uniform(c.params(lo, hi, has_bias, tiles_n=tiles_n, tiles=tiles,
                                   splits=splits, k_span=span, has_resid=has_resid),
                          f"{op.name} params")
    taps = ctx.constant_buffer(tap_table(c), dtypes.INT32, f"{ctx.where(op)} taps")
    grid = ctx.grid(tiles * splits * c.batch * c.groups)
    if not split:
        ctx.dispatch(op, pipeline, bindings + [(4, uniform), (6, taps)], grid)
        return
    part = ctx.resources.scratch(split_k.SCRATCH, 4 * splits * numel)
    ctx.dispatch(op, pipeline, bindings[:2] + [(4, uniform), (5, part), (6, taps)], grid)
    # the sums are finished (bias, residual, clamp) where they are added up
    pipeline = await ctx.pipeline(DIRECT, {"wg_size": wg}, "split_sum", half)
    ctx.dispatch(op, pipeline, bindings[2:] + [(4, uniform), (5, part)],
                 ctx.grid(-(-numel // wg)))


def tap_table(c: Conv) -> bytes:
    """The gemm's taps: for each k = (ci, ky, kx) of K, its offset in one item's input
    from the window's corner, dy ky and dx kx (four i32)."""
    (dy, dx), out = c.dilation, bytearray()
    for ci in range(c.cin // c.groups):
        for ky in range(c.kh):
            for kx in range(c.kw):
                out += struct.pack("<4i", (ci * c.h + ky * dy) * c.w + kx * dx, ky * dy,
                                   kx * dx, 0)
    return bytes(out)


def _bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", v))[0]


async def _pointwise(ctx, op, c: Conv, ids, has_bias, lo, hi, half) -> None:
    """A 1x1 convolution of one item: x [Cin, HW] transposed into [HW, Cin], then the
    matmul family's [HW, Cin] x [Cout, Cin] product, stored transposed (put_conv)."""
    pixels = c.h * c.w
    if c.batch != 1 or c.groups != 1 or (c.oh, c.ow) != (c.h, c.w):
        raise UnsupportedError(f"{op.name}: the matmul form runs a 1x1 convolution of one "
                               f"item ({ctx.where(op)})")
    size = pixels * c.cin * (2 if half else 4)
    xt = ctx.resources.buffer(max(4, (size + 3) & ~3), f"{ctx.where(op)} input transposed")
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(TRANSPOSE, {"wg_size": wg}, "main", half)
    params = TRANSPOSE.uniform.pack(numel=pixels * c.cin, rows=c.cin, cols=pixels)
    ctx.dispatch(op, pipeline, [(0, ids[0]), (1, xt), (2, ctx.uniform(params, "transpose"))],
                 ctx.grid(-(-pixels * c.cin // wg)))
    traits = ctx.device.info.traits
    form = matmul_choice.choose(traits, pixels, c.cout, c.cin, half)
    ctx.note_kernel(op, matmul=form.name)
    bindings = [(0, xt), (1, ids[1]), (2, ids[2]), (4, ids[3])]
    epilogue = "conv"
    if 7 in ids:
        bindings, epilogue = bindings + [(5, ids[7])], "conv_resid"
    await matmul.record(ctx, op, form, bindings, pixels, c.cout, c.cin, has_bias, half,
                        epilogue, _bits(lo), _bits(hi))


# --- reference -----------------------------------------------------------------------
def reference(read, values, args):
    clamp = len(args) >= 12
    x, w = read(args[0]), read(args[1])
    bias = None if isinstance(values[args[2]], Null) else read(args[2])
    lists = [int_list(values[args[i]]) for i in (3, 4, 5, 7)]
    transposed = bool(scalar_value(values, args[6], "transposed", ("bool",)))
    groups = int(scalar_value(values, args[8], "groups", ("int",)))
    c = conv_dims(x.shape, w.shape, values[args[-1]].shape, bias and bias.shape,
                  *lists[:3], transposed, lists[3], groups, "convolution")
    lo, hi = -math.inf, math.inf
    if clamp:
        lo, hi = clamp_bounds(*(scalar_value(values, args[i], "clamp", optional=True)
                                for i in (-3, -2)))
    out = reference_values(c, x.values, w.values, bias.values if bias else None)
    if len(args) == 13:  # pte_webgpu.conv_residual
        out = [r + v for r, v in zip(read(args[9]).values, out)]
    return [v if v != v else min(max(v, lo), hi) if lo <= hi else hi for v in out]


def reference_values(c: Conv, xs, ws, bs) -> list[float]:
    """The convolution on flat NCHW values, each output an exact sum (math.fsum)."""
    (sy, sx), (py, px), (dy, dx) = c.stride, c.padding, c.dilation
    cin_g, cout_g = c.cin // c.groups, c.cout // c.groups
    out = [0.0] * (c.batch * c.cout * c.oh * c.ow)
    terms = [[] for _ in out]
    for b in range(c.batch):
        for ci in range(c.cin):
            g = ci // cin_g
            for iy in range(c.h):
                for ix in range(c.w):
                    xv = xs[((b * c.cin + ci) * c.h + iy) * c.w + ix]
                    for j in range(cout_g):
                        co = g * cout_g + j
                        for ky in range(c.kh):
                            for kx in range(c.kw):
                                if c.transposed:
                                    oy, ox = iy * sy - py + ky * dy, ix * sx - px + kx * dx
                                    wv = ws[((ci * cout_g + j) * c.kh + ky) * c.kw + kx]
                                else:  # output (oy, ox) reads iy = oy * sy - py + ky * dy
                                    oy, rest_y = divmod(iy + py - ky * dy, sy)
                                    ox, rest_x = divmod(ix + px - kx * dx, sx)
                                    if rest_y or rest_x:
                                        continue
                                    wv = ws[((co * cin_g + ci % cin_g) * c.kh + ky) * c.kw + kx]
                                if 0 <= oy < c.oh and 0 <= ox < c.ow:
                                    terms[((b * c.cout + co) * c.oh + oy) * c.ow + ox].append(
                                        xv * wv)
    for i, t in enumerate(terms):
        co = i // (c.oh * c.ow) % c.cout
        out[i] = math.fsum(t) + (bs[co] if bs else 0.0)
    return out


def choices(graph, op) -> dict[str, str]:
    """The variant each typical adapter would run for this op (inspect)."""
    try:
        vals = graph.values
        a = op.args
        bias = None if isinstance(vals[a[2]], Null) else vals[a[2]].shape
        c = conv_dims(vals[a[0]].shape, vals[a[1]].shape, vals[a[-1]].shape, bias,
                      *(int_list(vals[a[i]]) for i in (3, 4, 5)), bool(vals[a[6]].value),
                      int_list(vals[a[7]]), int(vals[a[8]].value), op.name)
    except (FormatError, AttributeError, TypeError, IndexError):
        return {}  # malformed op: inspect shows it, the build refuses it
    return VARIANTS.typical(**c.shape())


define("aten.convolution.default", build, reference, 10, half=True, choices=choices)
define("et_vk.conv_with_clamp.default", build, reference, 12, half=True, choices=choices)
define(RESIDUAL, build, reference, 13, half=True, choices=choices)
