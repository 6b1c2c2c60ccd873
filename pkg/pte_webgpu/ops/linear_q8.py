"""8-bit weight linears the Vulkan partitioner emits (ExecuTorch 1.5.1, found by
exporting: tests/fixtures/quant8/make_quant8.py, docs/quantized-formats.md):

    et_vk.linear_q8ta_q8csw(x, in_scale, in_zp, w, w_sums, w_scales, bias, out)
        static per-tensor int8 x, per-channel symmetric int8 w, float out
    et_vk.q8ta_linear(x, in_scale, in_zp, w, w_sums, w_scales, out_scale, out_zp, bias,
                      activation, out)      (q8ta_linear_gemv: the same, M = 1)
        the same with the output quantized to int8 (activation "none" | "relu")
    aten._weight_int8pack_mm(x, w, scales, out)   weight-only: float x, int8 w

x [..., K] (int8 for the q8ta ops, K a multiple of 4 as the partitioner requires), w
[N, K] int8 row-major, w_scales/bias/w_sums padded by the serializer to a multiple of 4
(at least N values are read). The integer ops accumulate exactly in i32 (dot4I8Packed
where the adapter's WGSL has packed_4x8_integer_dot_product, else bytes unpacked in i32:
the ``linear_q8`` variants); the weight sums the zero point needs come from the weights
themselves, so a file's w_sums only have to be long enough.
"""

from __future__ import annotations

import math

from ..errors import FormatError, UnsupportedError
from ..model.f32 import to_f32
from ..model.graph import Null, Scalar, TensorValue
from ..shaders.compose import Binding, Entry, Kernel, Uniform, sections
from .common import elementwise_workgroup
from .quantize_tensor import (check_float_constant, int_arg, quant_tensor, quantize_value,
                              scale_arg)
from . import sizes
from .registry import define
from .variants import declare

VARIANTS = declare(
    "linear_q8", ("dot4", "unpack"),
    doc="dot4: WGSL dot4I8Packed (packed_4x8_integer_dot_product); unpack: bytes "
        "sign-extended and multiplied in i32",
    choose=lambda traits, **shape: "dot4" if getattr(traits, "packed_dot", False) else "unpack",
    supported=lambda v, traits, **shape: None if v == "unpack" or getattr(
        traits, "packed_dot", False) else "its WGSL lacks packed_4x8_integer_dot_product",
    measure=lambda traits, **shape: ["dot4", "unpack"])

PARAMS = Uniform(("m", "u32"), ("n", "u32"), ("k4", "u32"), ("numel", "u32"),
                 ("in_scale", "f32"), ("in_zp", "i32"), ("out_inv", "f32"), ("out_zp", "i32"),
                 ("has_bias", "u32"), ("relu", "u32"))
_BINDINGS = (Binding(0, "x", type="u32"), Binding(1, "w", type="u32"),
             Binding(2, "wscale", type="f32"), Binding(3, "bias", type="f32"),
             Binding(4, "out", "read_write", "u32"))
_ENTRIES = (Entry("main_f32", "item_f32", "params.numel"),
            Entry("main_q8", "item_q8", "(params.numel + 3u) / 4u"))
KERNELS = {v: Kernel("linear_q8", _BINDINGS, PARAMS, half=False, entries=_ENTRIES,
                     generated=sections("linear_q8_dot")[v], name=f"linear_q8_{v}")
           for v in VARIANTS.names}

PACK_PARAMS = Uniform(("n", "u32"), ("k", "u32"), ("numel", "u32"))
PACK_KERNEL = Kernel("weight_int8pack", (Binding(0, "x"), Binding(1, "w", type="u32"),
                                         Binding(2, "scales"), Binding(3, "out", "read_write")),
                     PACK_PARAMS, half=False, entries=(Entry("main", "item", "params.numel"),))

MAX_K = 1 << 17  # |x*w| <= 2^14 per term: the i32 sum stays exact below this many terms


def _shapes(ctx, op, x_id, w_id, out_id):
    """(M, N, K) from x [..., K], w [N, K] int8 and out [..., N]; FormatError otherwise."""
    x, w, out = ctx.tensor(x_id, op), quant_tensor(ctx, w_id, op, "weights"), ctx.tensor(out_id, op)
    if w.dtype.name != "int8" or len(w.shape) != 2 or not x.shape:
        raise FormatError(f"{op.name}: weights {w.dtype.name}{list(w.shape)} should be int8 "
                          f"[N, K] for input {list(x.shape)}", field=ctx.where(op))
    n, k = w.shape
    if x.shape[-1] != k or tuple(out.shape) != tuple(x.shape[:-1]) + (n,):
        raise FormatError(f"{op.name}: input {list(x.shape)} x weights {list(w.shape)} -> "
                          f"output {list(out.shape)}: shapes disagree", field=ctx.where(op))
    if k > MAX_K:
        raise UnsupportedError(f"{op.name}: K = {k} exceeds {MAX_K} ({ctx.where(op)})")
    return (x.numel // k if k else 0), n, k


def _bias(ctx, op, vid, n):
    if isinstance(ctx.graph.values[vid], Null):
        return None
    check_float_constant(ctx, vid, op, "bias", n)
    return vid


def _activation(ctx, op, vid) -> bool:
    value = ctx.graph.values[vid]
    if isinstance(value, Null):
        return False
    if isinstance(value, Scalar) and value.kind == "string" and value.value in ("none", "relu"):
        return value.value == "relu"
    raise UnsupportedError(f"{op.name}: activation {getattr(value, 'value', value.kind)!r} "
                           f"(value {vid}); expected 'none' or 'relu' ({ctx.where(op)})")


async def build_q8ta(ctx, op):
    """The three integer ops: argument layouts differ only in the output quantization."""
    quantized = op.name != "et_vk.linear_q8ta_q8csw.default"
    count = 11 if quantized else 8
    args = ctx.args(op, count)
    x_id, scale_id, zp_id, w_id, sums_id, ws_id = args[:6]
    out_id = args[-1]
    quant_tensor(ctx, x_id, op, "input")
    m, n, k = _shapes(ctx, op, x_id, w_id, out_id)
    if ctx.tensor(x_id, op).dtype.name != "int8" or k % 4:
        raise UnsupportedError(f"{op.name}: input {ctx.tensor(x_id, op).dtype.name}"
                               f"{list(ctx.tensor(x_id, op).shape)}: expected int8 with K a "
                               f"multiple of 4 ({ctx.where(op)})")
    in_scale = scale_arg(ctx, scale_id, op, "input scale")
    in_zp = int_arg(ctx, zp_id, op, "input zero point", -128, 127)
    sums = ctx.int_tensor(sums_id, op)
    if sums.numel < n:
        raise FormatError(f"{op.name}: weight sums {list(sums.shape)} hold {sums.numel} values; "
                          f"N = {n} needs {n}", field=ctx.where(op))
    check_float_constant(ctx, ws_id, op, "weight scales", n)
    fields = dict(m=m, n=n, k4=k // 4, numel=m * n, in_scale=in_scale, in_zp=in_zp)
    if quantized:
        out = quant_tensor(ctx, out_id, op, "output")
        if out.dtype.name != "int8":
            raise UnsupportedError(f"{op.name}: output {out.dtype.name}; expected int8")
        out_scale = scale_arg(ctx, args[6], op, "output scale")
        if not math.isfinite(to_f32(1.0 / out_scale)):
            raise FormatError(f"{op.name}: output scale {out_scale!r} has no finite float32 "
                              "inverse", field=ctx.where(op))
        fields.update(out_inv=to_f32(1.0 / out_scale),
                      out_zp=int_arg(ctx, args[7], op, "output zero point", -128, 127))
        bias_id, relu = _bias(ctx, op, args[8], n), _activation(ctx, op, args[9])
    else:
        ctx.float_tensor(out_id, op)
        if ctx.half(out_id):
            raise UnsupportedError(f"{op.name}: float16 output held as f16 is not supported "
                                   f"({ctx.where(op)})")
        bias_id, relu = _bias(ctx, op, args[6], n), False
    if m * n == 0:
        return
    variant = VARIANTS.pick(ctx, op, m=m, n=n, k=k)
    wg = elementwise_workgroup(ctx)
    entry = "main_q8" if quantized else "main_f32"
    pipeline = await ctx.pipeline(KERNELS[variant], {"wg_size": wg}, entry)
    params = ctx.uniform(PARAMS.pack(**fields, has_bias=int(bias_id is not None), relu=int(relu)),
                         f"{op.name} params")
    items = -(-m * n // 4) if quantized else m * n
    ctx.dispatch(op, pipeline, [(0, x_id), (1, w_id), (2, ws_id),
                                (3, ws_id if bias_id is None else bias_id), (4, out_id),
                                (5, params)], ctx.grid(-(-items // wg)))


async def build_int8pack(ctx, op):
    x_id, w_id, scales_id, out_id = ctx.args(op, 4)
    ctx.float_tensor(x_id, op)
    ctx.float_tensor(out_id, op)
    if ctx.half(x_id) or ctx.half(out_id):
        raise UnsupportedError(f"{op.name}: float16 tensors held as f16 are not supported")
    m, n, k = _shapes(ctx, op, x_id, w_id, out_id)
    check_float_constant(ctx, scales_id, op, "scales", n)
    if m * n == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(PACK_KERNEL, {"wg_size": wg})
    params = ctx.uniform(PACK_PARAMS.pack(n=n, k=k, numel=m * n), f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, x_id), (1, w_id), (2, scales_id), (3, out_id), (4, params)],
                 ctx.grid(-(-m * n // wg)))


# --- CPU references (pure Python) -------------------------------------------------------
def _rows(read, x_id, w_id):
    x, w = read(x_id), read(w_id)
    n, k = w.shape
    xs = [x.values[i:i + k] for i in range(0, len(x.values), k)]
    ws = [w.values[j * k:(j + 1) * k] for j in range(n)]
    return xs, ws, n


def q8ta_reference(read, values, args):
    """Exact integer sums, then the float epilogue and (q8ta) the output quantize."""
    quantized = len(args) == 11
    in_scale, in_zp = float(values[args[1]].value), int(values[args[2]].value)
    xs, ws, n = _rows(read, args[0], args[3])
    scales = read(args[5]).values
    bias_id = args[8] if quantized else args[6]
    bias = None if isinstance(values[bias_id], Null) else read(bias_id).values
    relu = quantized and getattr(values[args[9]], "value", "none") == "relu"
    s_in = to_f32(in_scale)
    out = []
    for xr in xs:
        for j in range(n):
            acc = sum((int(a) - in_zp) * int(b) for a, b in zip(xr, ws[j]))
            v = to_f32(to_f32(acc) * to_f32(s_in * scales[j]))
            if bias is not None:
                v = to_f32(v + bias[j])
            if relu:
                v = max(v, 0.0)
            if quantized:
                inv = to_f32(1.0 / float(values[args[6]].value))
                v = quantize_value(v, inv, int(values[args[7]].value), -128, 127)
            out.append(v)
    return out


def int8pack_reference(read, values, args):
    xs, ws, n = _rows(read, args[0], args[1])
    scales = read(args[2]).values
    out = []
    for xr in xs:
        for j in range(n):
            acc = 0.0
            for a, b in zip(xr, ws[j]):
                acc = to_f32(acc + to_f32(a * b))
            out.append(to_f32(acc * scales[j]))
    return out


def choices(graph, op) -> dict[str, str]:
    x = graph.values[op.args[0]] if op.args else None
    if not isinstance(x, TensorValue) or not x.shape:
        return {}
    return VARIANTS.typical(m=0, n=0, k=x.shape[-1])


def q8ta_sizes(op, shape, integer, values):
    """Dynamic rows: x [..., K] -> out [..., N], N from the weights (argument 3)."""
    return {op.args[-1]: tuple(shape(op.args[0])[:-1]) + (values[op.args[3]].shape[0],)}


for _name in ("et_vk.linear_q8ta_q8csw.default", "et_vk.q8ta_linear.default",
              "et_vk.q8ta_linear_gemv.default"):
    define(_name, build_q8ta, q8ta_reference, choices=choices, sizes=q8ta_sizes)
define("aten._weight_int8pack_mm.default", build_int8pack, int8pack_reference, 4,
       sizes=sizes.linear)
