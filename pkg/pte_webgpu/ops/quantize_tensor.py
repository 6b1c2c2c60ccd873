"""``quantized_decomposed.quantize_per_tensor`` and ``dequantize_per_tensor`` in their
``.default`` form (scale a Double, zero point an Int: what the Vulkan partitioner
serializes around et_vk.q8ta_linear and linear_q8ta_q8csw) and ``.tensor`` form (scale
and zero point one-element tensors, e.g. from choose_qparams_tensor).

    quantize_per_tensor(x, scale, zp, qmin, qmax, dtype, out)
        out = clamp(round_half_even(x * (1 / scale)) + zp, qmin, qmax) as int8/uint8
    dequantize_per_tensor(q, scale, zp, qmin, qmax, dtype, out_dtype, out)
        out = (float32(q) - zp) * scale

as torch's reference (torch/ao/quantization/fx/_decomposed.py) computes them: 1 / scale
in double then rounded to float32, the product in float32. int8/uint8 tensors are raw
bytes, four to a u32 word (runtime/storage.py). Also the scale/zero-point checks the
8-bit families share (scale_arg, check_float_constant).
"""

from __future__ import annotations

import math
import struct

from ..errors import FormatError, UnsupportedError
from ..model.f32 import to_f32
from ..model.graph import Scalar, TensorValue
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from .common import elementwise_workgroup
from . import sizes
from .registry import register

QUANT_DTYPES = ("int8", "uint8")
PARAMS = Uniform(("numel", "u32"), ("qmin", "i32"), ("qmax", "i32"), ("tensor_form", "u32"),
                 ("signed", "u32"))
QUANTIZE = Kernel("quantize", (Binding(0, "x"), Binding(1, "qscale", type="f32"),
                               Binding(2, "qzp", type="i32"),
                               Binding(3, "out", "read_write", "u32")), PARAMS, half=False,
                  entries=(Entry("main", "quantize_word", "(params.numel + 3u) / 4u"),))
DEQUANTIZE = Kernel("dequantize", (Binding(0, "x", type="u32"), Binding(1, "qscale", type="f32"),
                                   Binding(2, "qzp", type="i32"),
                                   Binding(3, "out", "read_write")), PARAMS, half=False,
                    entries=(Entry("main", "dequantize_item", "params.numel"),))


# --- checks the 8-bit ops share --------------------------------------------------------
def scale_arg(ctx, vid: int, op, what: str) -> float:
    """A Double (or Int) scale torch divides by or multiplies with: finite and > 0, else a
    FormatError naming the op (torch would give inf/NaN rows, never an error)."""
    value = ctx.graph.values[vid]
    if not (isinstance(value, Scalar) and value.kind in ("int", "double")):
        raise FormatError(f"{op.name}: {what} (value {vid}) should be a Double, found "
                          f"{value.kind}", field=ctx.where(op))
    s = float(value.value)
    if not (math.isfinite(s) and s > 0 and math.isfinite(to_f32(s)) and to_f32(s) > 0):
        raise FormatError(f"{op.name}: {what} {s!r} (value {vid}) should be a finite scale > 0 "
                          "in float32", field=ctx.where(op))
    return s


def int_arg(ctx, vid: int, op, what: str, low: int = -(1 << 31), high: int = (1 << 31) - 1):
    value = ctx.graph.values[vid]
    if not (isinstance(value, Scalar) and value.kind == "int"):
        raise FormatError(f"{op.name}: {what} (value {vid}) should be an Int, found {value.kind}",
                          field=ctx.where(op))
    if not low <= int(value.value) <= high:
        raise FormatError(f"{op.name}: {what} {value.value} (value {vid}) is outside "
                          f"[{low}, {high}]", field=ctx.where(op))
    return int(value.value)


def quant_tensor(ctx, vid: int, op, what: str) -> TensorValue:
    t = ctx.tensor(vid, op)
    if t.dtype is None or t.dtype.name not in QUANT_DTYPES:
        raise UnsupportedError(f"{op.name}: {what} (value {vid}) is "
                               f"{t.dtype.name if t.dtype else 'of no dtype'}{list(t.shape)}; "
                               f"expected int8 or uint8 ({ctx.where(op)})")
    return t


def host_bytes(ctx, vid: int):
    """A constant's file bytes: a delegate's (BuildContext.constant_bytes) or a plan's
    (``plan_bytes``, set on a plan kernel's context); None for a computed tensor."""
    data = ctx.constant_bytes(vid) if hasattr(ctx, "constant_bytes") else None
    plan_bytes = getattr(ctx, "plan_bytes", None)
    if data is None and plan_bytes is not None:
        data = plan_bytes(vid)
    return data


def check_float_constant(ctx, vid: int, op, what: str, need: int, positive: bool = False):
    """A float tensor the f32 kernels read (float32, or float16 held as f32: force_fp16
    programs) of at least ``need`` elements; when it is a constant, its first ``need``
    values finite (and > 0 when ``positive``). FormatError naming op and shape."""
    t = ctx.tensor(vid, op)
    if t.dtype is None or t.dtype.name not in ("float32", "float16") or ctx.half(vid):
        raise UnsupportedError(f"{op.name}: {what} (value {vid}) is "
                               f"{t.dtype.name if t.dtype else 'of no dtype'}; expected float32 "
                               f"or float16 held as f32 ({ctx.where(op)})")
    if t.numel < need:
        raise FormatError(f"{op.name}: {what} {list(t.shape)} (value {vid}) holds {t.numel} "
                          f"values; the op needs {need}", field=ctx.where(op))
    data = host_bytes(ctx, vid)
    if data is None:
        return t
    values = struct.unpack_from(f"<{need}{t.dtype.struct_code}", data)
    for i, v in enumerate(values):
        if not math.isfinite(v) or (positive and v <= 0):
            raise FormatError(f"{op.name}: {what} {list(t.shape)} (value {vid}) has {v!r} at "
                              f"{i}; scales must be finite{' and > 0' if positive else ''}",
                              field=ctx.where(op))
    return t


def _qparams(ctx, op, scale_id: int, zp_id: int, invert: bool):
    """(buffer or vid of the scale, of the zero point, tensor_form): the default form's
    Double/Int written into two small buffers at load."""
    if isinstance(ctx.graph.values[scale_id], TensorValue):
        check_float_constant(ctx, scale_id, op, "scale", 1, positive=True)
        ctx.int_tensor(zp_id, op)
        if ctx.tensor(zp_id, op).numel < 1:
            raise FormatError(f"{op.name}: zero point (value {zp_id}) is empty",
                              field=ctx.where(op))
        return scale_id, zp_id, 1
    scale = scale_arg(ctx, scale_id, op, "scale")
    zp = int_arg(ctx, zp_id, op, "zero point", -(1 << 24), 1 << 24)
    value = to_f32(1.0 / scale) if invert else to_f32(scale)
    if not math.isfinite(value):  # a scale so small that 1 / scale overflows float32
        raise FormatError(f"{op.name}: scale {scale!r} (value {scale_id}) has no finite "
                          "float32 inverse", field=ctx.where(op))
    bufs = []
    for what, data in (("scale", struct.pack("<f", value)), ("zero point", struct.pack("<i", zp))):
        bufs.append(ctx.resources.buffer(4, f"{ctx.where(op)} {what}"))
        ctx.device.write_buffer(bufs[-1], data)
    return bufs[0], bufs[1], 0


def _range(ctx, op, qmin_id, qmax_id, t: TensorValue):
    lo, hi = (-128, 127) if t.dtype.name == "int8" else (0, 255)
    qmin = int_arg(ctx, qmin_id, op, "quant_min", lo, hi)
    qmax = int_arg(ctx, qmax_id, op, "quant_max", qmin, hi)
    return qmin, qmax


# --- CPU references (pure Python) -------------------------------------------------------
def ref_qparams(read, values, scale_id, zp_id):
    """(scale as a Python float, zero point) of either form; the tensor form's scale is an
    f32 (its .item())."""
    s, z = values[scale_id], values[zp_id]
    scale = float(read(scale_id).values[0]) if isinstance(s, TensorValue) else float(s.value)
    zp = int(read(zp_id).values[0]) if isinstance(z, TensorValue) else int(z.value)
    if not (math.isfinite(scale) and scale > 0):
        raise FormatError(f"scale {scale!r} should be a finite scale > 0")
    return scale, zp


def round_half_even(v: float) -> float:
    return float(round(v))  # Python's round() of a float ties to even, as torch.round


def quantize_value(x: float, inv_scale: float, zp: int, qmin: int, qmax: int) -> int:
    q = round_half_even(to_f32(x * inv_scale)) + zp
    return int(min(max(q, qmin), qmax))


def quantize_reference(read, values, args):
    scale, zp = ref_qparams(read, values, args[1], args[2])
    qmin, qmax = int(values[args[3]].value), int(values[args[4]].value)
    inv = to_f32(1.0 / scale)
    return [quantize_value(to_f32(x), inv, zp, qmin, qmax) for x in read(args[0]).values]


def dequantize_reference(read, values, args):
    scale, zp = ref_qparams(read, values, args[1], args[2])
    s = to_f32(scale)
    return [to_f32((int(q) - zp) * s) for q in read(args[0]).values]



def _args(ctx, op, count: int) -> tuple:
    """(input, scale, zero point, qmin, qmax, out) of a per-tensor (de)quantize taking
    ``count`` arguments, or one fewer."""
    if len(op.args) not in (count - 1, count):
        raise FormatError(f"{op.name} takes {count} arguments, found {len(op.args)}",
                          field=ctx.where(op))
    return (*op.args[:5], op.args[-1])


@register("quantized_decomposed.quantize_per_tensor.default",
          "quantized_decomposed.quantize_per_tensor.tensor", reference=quantize_reference,
          sizes=sizes.same_as_first)
async def build_quantize(ctx, op):
    x_id, scale_id, zp_id, qmin_id, qmax_id, out_id = _args(ctx, op, 7)
    x = ctx.float_tensor(x_id, op)
    out = quant_tensor(ctx, out_id, op, "output")
    if tuple(out.shape) != tuple(x.shape) or ctx.half(x_id):
        raise UnsupportedError(f"{op.name}: input {x.dtype.name}{list(x.shape)} -> output "
                               f"{out.dtype.name}{list(out.shape)}: expected float32 in and "
                               f"the same shape out ({ctx.where(op)})")
    qmin, qmax = _range(ctx, op, qmin_id, qmax_id, out)
    scale, zp, form = _qparams(ctx, op, scale_id, zp_id, invert=True)
    if out.numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(QUANTIZE, {"wg_size": wg})
    uniform = ctx.uniform(PARAMS.pack(numel=out.numel, qmin=qmin, qmax=qmax, tensor_form=form),
                          f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, x_id), (1, scale), (2, zp), (3, out_id), (4, uniform)],
                 ctx.grid(-(-out.numel // (4 * wg))))


@register("quantized_decomposed.dequantize_per_tensor.default",
          "quantized_decomposed.dequantize_per_tensor.tensor", reference=dequantize_reference,
          sizes=sizes.same_as_first)
async def build_dequantize(ctx, op):
    x_id, scale_id, zp_id, qmin_id, qmax_id, out_id = _args(ctx, op, 8)
    x = quant_tensor(ctx, x_id, op, "input")
    out = ctx.float_tensor(out_id, op)
    if tuple(out.shape) != tuple(x.shape) or ctx.half(out_id):
        raise UnsupportedError(f"{op.name}: input {x.dtype.name}{list(x.shape)} -> output "
                               f"{out.dtype.name}{list(out.shape)}: expected the same shape, "
                               f"float32 out ({ctx.where(op)})")
    _range(ctx, op, qmin_id, qmax_id, x)
    scale, zp, _form = _qparams(ctx, op, scale_id, zp_id, invert=False)
    if out.numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(DEQUANTIZE, {"wg_size": wg})
    uniform = ctx.uniform(PARAMS.pack(numel=out.numel, signed=int(x.dtype.name == "int8")),
                          f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, x_id), (1, scale), (2, zp), (3, out_id), (4, uniform)],
                 ctx.grid(-(-out.numel // wg)))
