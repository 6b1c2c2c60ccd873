"""2-D pooling over the two trailing dims of a (N, C, H, W) or (C, H, W) tensor
(shaders/pool.wgsl): one output element per invocation, the window walked in torch's
order.

``aten.max_pool2d_with_indices.default [self, kernel_size, stride, padding, dilation,
ceil_mode, out_list]`` (what ``F.max_pool2d`` becomes, with or without
``return_indices``): ``out_list`` is a ValueList ``[out, indices]`` (indices int64, held
as int32: the flat ``h * W + w`` of the maximum within its plane).
``aten.avg_pool2d.default [self, kernel_size, stride, padding, ceil_mode,
count_include_pad, divisor_override (Int|Null), out]``. ``aten._adaptive_avg_pool2d.default
[self, output_size, out]``: the Vulkan partitioner turns ``adaptive_avg_pool2d(x, 1)``
into ``mean.dim`` and leaves other output sizes to the plan kernel
``aten::_adaptive_avg_pool2d.out``, which runs here; output o's window is
``[floor(o * in / out), ceil((o + 1) * in / out))``, its sum divided by its height, then
its width (torch's CPU order).

Lists hold one or two ints (one is used for both dims); an empty stride is the kernel
size, as torch. The output size is torch's ``pooling_output_shape``; a graph whose
output shape differs is refused. Max: the first maximum of the window (``v > best``),
any NaN taking over (the last NaN wins), as torch's CPU kernel; padding is never read
(a window clamped to the input, as if padded with -inf). Avg: the sum over the window
clamped to the input, divided by ``divisor_override``, or the window's size clamped to
the padded input (``count_include_pad``), or the count of input elements it covers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import FormatError, UnsupportedError
from ..model.graph import ListValue, Null
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from .args import bool_arg, int_arg, int_list, int_list_arg
from .common import elementwise_workgroup
from .exec_ints import dispatch_per_element
from .registry import define

MAX, AVG, ADAPTIVE = 0, 1, 2  # pool.wgsl's op codes

PARAMS = Uniform(("numel", "u32"), ("in_h", "u32"), ("in_w", "u32"), ("out_h", "u32"),
                 ("out_w", "u32"), ("kh", "u32"), ("kw", "u32"), ("sh", "u32"), ("sw", "u32"),
                 ("ph", "u32"), ("pw", "u32"), ("dh", "u32"), ("dw", "u32"),
                 ("divisor", "u32"), ("count_pad", "u32"))
KERNEL = Kernel("pool", (Binding(0, "x"), Binding(1, "y", "read_write"),
                         Binding(2, "indices", "read_write", "i32")), PARAMS,
                snippets=("bits", "flat_index"),
                entries=(Entry("main", "pool_item", "params.numel"),))


@dataclass(frozen=True)
class Window:
    """One pooling op's geometry (per dim: height, width)."""
    kernel: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    ceil_mode: bool

    def out_size(self, size: int, d: int) -> int:
        """torch's pooling_output_shape for dim ``d`` (0: height, 1: width)."""
        k, s, p, dil = self.kernel[d], self.stride[d], self.padding[d], self.dilation[d]
        span = size + 2 * p - dil * (k - 1) - 1 + (s - 1 if self.ceil_mode else 0)
        out = span // s + 1  # floor division, as torch's div_rtn
        if self.ceil_mode and (out - 1) * s >= size + p:
            out -= 1  # the last window must start inside the input or its left padding
        return out


def _pair(items, name: str, what: str, default=None) -> tuple[int, int]:
    if not items and default is not None:
        return default
    if items is None or len(items) not in (1, 2):
        raise FormatError(f"{name}: {what} should hold one or two ints, found {items}")
    return (items[0], items[0]) if len(items) == 1 else (items[0], items[1])


def window(name: str, kernel, stride, padding, dilation, ceil_mode: bool,
           max_pool: bool) -> Window:
    """The checked geometry; the errors torch gives for the same arguments."""
    k = _pair(kernel, name, "kernel_size")
    w = Window(k, _pair(stride, name, "stride", default=k), _pair(padding, name, "padding"),
               _pair(dilation, name, "dilation"), ceil_mode)
    for what, pair, low in (("kernel_size", w.kernel, 1), ("stride", w.stride, 1),
                            ("dilation", w.dilation, 1), ("padding", w.padding, 0)):
        if min(pair) < low:
            raise FormatError(f"{name}: {what} {list(pair)} should be >= {low}")
    for d in (0, 1):
        reach = (w.kernel[d] - 1) * w.dilation[d] + 1 if max_pool else w.kernel[d]
        if w.padding[d] > reach // 2:
            raise FormatError(f"{name}: padding {list(w.padding)} should be at most half of "
                              f"the kernel {list(w.kernel)}")
    return w


def _check_input(name: str, shape, w: Window, where=None) -> tuple[int, int, int, int]:
    """(planes, in_h, in_w, out_h, out_w) of a 3-D or 4-D input."""
    if len(shape) not in (3, 4):
        raise UnsupportedError(f"{name}: input of rank {len(shape)}; pooling takes (C, H, W) "
                               "or (N, C, H, W)")
    in_h, in_w = shape[-2:]
    out_h, out_w = w.out_size(in_h, 0), w.out_size(in_w, 1)
    if out_h < 1 or out_w < 1:
        raise FormatError(f"{name}: input {list(shape)} is too small for the window "
                          f"(output {out_h}x{out_w})", field=where)
    return math.prod(shape[:-2]), in_h, in_w, out_h, out_w


def pooled_shape(name: str, shape, w: Window) -> tuple[int, ...]:
    _, _, _, out_h, out_w = _check_input(name, shape, w)
    return tuple(shape[:-2]) + (out_h, out_w)


async def _dispatch(ctx, op, code: int, x_id: int, out_id: int, idx_id: int | None,
                    w: Window, divisor: int = 0, count_pad: bool = False) -> None:
    x = ctx.float_tensor(x_id, op)
    out = ctx.float_tensor(out_id, op)
    planes, in_h, in_w, out_h, out_w = _check_input(op.name, x.shape, w, ctx.where(op))
    want = tuple(x.shape[:-2]) + (out_h, out_w)
    results = [out] + ([ctx.int_tensor(idx_id, op)] if idx_id is not None else [])
    for t in results:
        if tuple(t.shape) != want:
            raise FormatError(f"{op.name}: output shape {list(t.shape)}, the window gives "
                              f"{list(want)}", field=ctx.where(op))
    numel = planes * out_h * out_w
    if numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg, "op": code,
                                           "has_indices": int(idx_id is not None)},
                                  half=ctx.half(x_id))
    params = PARAMS.pack(numel=numel, in_h=in_h, in_w=in_w, out_h=out_h, out_w=out_w,
                         kh=w.kernel[0], kw=w.kernel[1], sh=w.stride[0], sw=w.stride[1],
                         ph=w.padding[0], pw=w.padding[1], dh=w.dilation[0],
                         dw=w.dilation[1], divisor=divisor, count_pad=int(count_pad))
    # Without an indices output a 4-byte buffer stands in (has_indices: never written).
    idx = ctx.resources.buffer(4, f"{op.name} no indices") if idx_id is None else idx_id
    dispatch_per_element(ctx, op, pipeline, [(0, x_id), (1, out_id), (2, idx),
                                             (3, ctx.uniform(params, f"{op.name} params"))],
                         out_id, wg)


async def build_adaptive_avg_pool(ctx, op):
    x_id, size_id, out_id = ctx.args(op, 3)
    x, out = ctx.float_tensor(x_id, op), ctx.float_tensor(out_id, op)
    size = _pair(int_list_arg(ctx, size_id, op), op.name, "output_size")
    if len(x.shape) not in (3, 4) or min(size) < 1 or 0 in x.shape[-2:]:
        raise UnsupportedError(f"{op.name}: input {list(x.shape)} to output size {list(size)}; "
                               "adaptive pooling takes a non-empty (C, H, W) or (N, C, H, W)")
    want = tuple(x.shape[:-2]) + size
    if tuple(out.shape) != want:
        raise FormatError(f"{op.name}: output shape {list(out.shape)}, expected {list(want)}",
                          field=ctx.where(op))
    in_h, in_w = x.shape[-2:]
    numel = out.numel
    if numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg, "op": ADAPTIVE, "has_indices": 0},
                                  half=ctx.half(x_id))
    params = PARAMS.pack(numel=numel, in_h=in_h, in_w=in_w, out_h=size[0], out_w=size[1])
    dispatch_per_element(ctx, op, pipeline, [
        (0, x_id), (1, out_id), (2, ctx.resources.buffer(4, f"{op.name} no indices")),
        (3, ctx.uniform(params, f"{op.name} params"))], out_id, wg)


def _max_outputs(ctx, op) -> tuple[int, int | None]:
    """(out, indices) of the ValueList."""
    out_list = ctx.graph.values[ctx.args(op, 7)[6]]
    if not (isinstance(out_list, ListValue) and out_list.kind == "value_list"
            and len(out_list.items) in (1, 2)):
        raise FormatError(f"{op.name}: the output should be a ValueList [out, indices]",
                          field=ctx.where(op))
    items = [int(v) for v in out_list.items]
    return items[0], (items[1] if len(items) == 2 else None)


async def build_max_pool(ctx, op):
    x_id, k_id, s_id, p_id, d_id, ceil_id, _ = ctx.args(op, 7)
    out_id, idx_id = _max_outputs(ctx, op)
    w = window(op.name, int_list_arg(ctx, k_id, op), int_list_arg(ctx, s_id, op),
               int_list_arg(ctx, p_id, op), int_list_arg(ctx, d_id, op),
               bool_arg(ctx, ceil_id, op), max_pool=True)
    await _dispatch(ctx, op, MAX, x_id, out_id, idx_id, w)


async def build_avg_pool(ctx, op):
    x_id, k_id, s_id, p_id, ceil_id, pad_id, div_id, out_id = ctx.args(op, 8)
    w = window(op.name, int_list_arg(ctx, k_id, op), int_list_arg(ctx, s_id, op),
               int_list_arg(ctx, p_id, op), [1], bool_arg(ctx, ceil_id, op), max_pool=False)
    divisor = 0 if isinstance(ctx.graph.values[div_id], Null) else int_arg(ctx, div_id, op)
    if isinstance(ctx.graph.values[div_id], Null) is False and divisor == 0:
        raise FormatError(f"{op.name}: divisor_override must not be zero", field=ctx.where(op))
    if divisor < 0:
        raise UnsupportedError(f"{op.name}: a negative divisor_override ({divisor})")
    await _dispatch(ctx, op, AVG, x_id, out_id, None, w, divisor,
                    bool_arg(ctx, pad_id, op, default=True))


# --- CPU references (torch's CPU kernels, in float64) --------------------------------

def _windows(shape, w: Window):
    """For each output element (C order): its plane's offset, the window's (h, w) starts,
    ends and steps clamped to the input, and the unclamped window's size for avg."""
    planes, in_h, in_w, out_h, out_w = _check_input("pool", shape, w)
    for plane in range(planes):
        for oh in range(out_h):
            for ow in range(out_w):
                yield plane * in_h * in_w, oh, ow, in_h, in_w


def max_pool_reference(read, values, args):
    x = read(args[0])
    w = window("max_pool2d", *(int_list(values[a]) for a in args[1:5]),
               bool(values[args[5]].value), max_pool=True)
    out, idx = [], []
    for base, oh, ow, in_h, in_w in _windows(x.shape, w):
        h0, w0 = oh * w.stride[0] - w.padding[0], ow * w.stride[1] - w.padding[1]
        h1 = min(h0 + (w.kernel[0] - 1) * w.dilation[0] + 1, in_h)
        w1 = min(w0 + (w.kernel[1] - 1) * w.dilation[1] + 1, in_w)
        while h0 < 0:
            h0 += w.dilation[0]
        while w0 < 0:
            w0 += w.dilation[1]
        best, at = -math.inf, h0 * in_w + w0
        for ih in range(h0, h1, w.dilation[0]):
            for iw in range(w0, w1, w.dilation[1]):
                v = x.values[base + ih * in_w + iw]
                if v > best or v != v:
                    best, at = v, ih * in_w + iw
        out.append(best)
        idx.append(at)
    return [out, idx] if len(values[args[-1]].items) == 2 else [out]


def avg_pool_reference(read, values, args):
    x = read(args[0])
    w = window("avg_pool2d", int_list(values[args[1]]), int_list(values[args[2]]),
               int_list(values[args[3]]), [1], bool(values[args[4]].value), max_pool=False)
    pad = values[args[5]]
    count_pad = True if isinstance(pad, Null) else bool(pad.value)
    div = values[args[6]]
    divisor = None if isinstance(div, Null) else int(div.value)
    out = []
    for base, oh, ow, in_h, in_w in _windows(x.shape, w):
        h0, w0 = oh * w.stride[0] - w.padding[0], ow * w.stride[1] - w.padding[1]
        h1, w1 = min(h0 + w.kernel[0], in_h + w.padding[0]), min(w0 + w.kernel[1],
                                                                 in_w + w.padding[1])
        size = (h1 - h0) * (w1 - w0)
        h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, in_h), min(w1, in_w)
        if h0 >= h1 or w0 >= w1:
            out.append(0.0)
            continue
        total = math.fsum(x.values[base + ih * in_w + iw]
                          for ih in range(h0, h1) for iw in range(w0, w1))
        n = divisor if divisor is not None else size if count_pad else (h1 - h0) * (w1 - w0)
        out.append(total / n)
    return out


def adaptive_avg_pool_reference(read, values, args):
    x = read(args[0])
    oh, ow = _pair(int_list(values[args[1]]), "adaptive_avg_pool2d", "output_size")
    in_h, in_w = x.shape[-2:]
    out = []
    for p in range(math.prod(x.shape[:-2])):
        base = p * in_h * in_w
        for i in range(oh):
            h0, h1 = i * in_h // oh, -(-(i + 1) * in_h // oh)
            for j in range(ow):
                w0, w1 = j * in_w // ow, -(-(j + 1) * in_w // ow)
                total = math.fsum(x.values[base + h * in_w + w]
                                  for h in range(h0, h1) for w in range(w0, w1))
                out.append(total / (h1 - h0) / (w1 - w0))
    return out


def _max_pool_sizes(op, shape, integer, values):
    """Actual output shapes on a dynamic input: the same window over its actual size."""
    a = op.args
    w = window(op.name, *(int_list(values[v]) for v in a[1:5]), bool(values[a[5]].value),
               max_pool=True)
    out = pooled_shape(op.name, shape(a[0]), w)
    return {int(v): out for v in values[a[6]].items}


def _avg_pool_sizes(op, shape, integer, values):
    a = op.args
    w = window(op.name, int_list(values[a[1]]), int_list(values[a[2]]),
               int_list(values[a[3]]), [1], bool(values[a[4]].value), max_pool=False)
    return {a[-1]: pooled_shape(op.name, shape(a[0]), w)}


define("aten.max_pool2d_with_indices.default", build_max_pool, max_pool_reference, 7,
       half=True, sizes=_max_pool_sizes)
define("aten.avg_pool2d.default", build_avg_pool, avg_pool_reference, 8, half=True,
       sizes=_avg_pool_sizes)
define("aten._adaptive_avg_pool2d.default", build_adaptive_avg_pool,
       adaptive_avg_pool_reference, 3, half=True)
