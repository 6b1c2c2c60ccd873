"""Elementwise unary ops (unary.wgsl), ``[self, ..., out]`` on same-shape tensors.

``aten.rsqrt.default [self, out]``, ``aten.sigmoid.default [self, out]``,
``aten.pow.Tensor_Scalar [self, exponent, out]``, ``aten.add.Scalar [self, other,
alpha, out]``; the activations ``aten.{tanh,relu,exp,neg,abs,sqrt}.default [self, out]``,
``aten.gelu.default [self, approximate ("none" | "tanh"), out]``,
``aten.clamp.default [self, min, max, out]`` (Int, Double or Null bounds) and
``aten.hardtanh.default [self, min_val, max_val, out]``; and ``round_to_half`` for
view.py's float32 -> float16 conversion.
"""

from __future__ import annotations

import math

from .. import f32
from ..errors import FormatError, UnsupportedError
from ..graph import Null, Scalar
from .common import elementwise_workgroup, number_arg, same_numel
from .registry import register

RSQRT, SIGMOID, SQUARE, POW, ADD, ROUND_HALF = range(6)
TANH, GELU, GELU_TANH, RELU, EXP, NEG, ABS, SQRT, CLAMP = range(6, 15)
PLAIN = {"aten.rsqrt.default": RSQRT, "aten.sigmoid.default": SIGMOID,
         "aten.tanh.default": TANH, "aten.relu.default": RELU, "aten.exp.default": EXP,
         "aten.neg.default": NEG, "aten.abs.default": ABS, "aten.sqrt.default": SQRT}
GELU_FORMS = {"none": GELU, "tanh": GELU_TANH}
INT_EXP_LIMIT = 1 << 24  # beyond this every f32 is an even integer anyway


def pow_params(exponent) -> tuple[int, float, int, int]:
    """(shader op, exponent as f32, integer flag, odd flag) for ``pow(x, exponent)``."""
    e = float(exponent)
    if e == 2.0:
        return SQUARE, e, 0, 0
    is_int = math.isfinite(e) and e == int(e) and abs(e) < INT_EXP_LIMIT
    return POW, e, int(is_int), int(is_int and int(e) % 2 == 1)


def _params(numel: int, a: float = 0.0, int_exp: int = 0, odd_exp: int = 0,
            b: float = 0.0) -> bytes:
    return f32.pack("<IfIIfffI", numel, a, int_exp, odd_exp, math.inf, math.nan, b, 0)


def clamp_bounds(low, high, error=FormatError) -> tuple[float, float]:
    """float32 (min, max) from Int/Double values or None (no bound: -inf / +inf); a
    finite bound beyond float32 raises ``error``, as torch refuses it."""
    return (-math.inf if low is None else f32.checked_f32(low, "clamp min", error),
            math.inf if high is None else f32.checked_f32(high, "clamp max", error))


async def round_to_half(ctx, op, x_id: int, out_id: int) -> None:
    """float32 -> float16 values (both held as f32): round to float16's precision."""
    await _dispatch(ctx, op, x_id, out_id, ROUND_HALF, _params(ctx.tensor(out_id, op).numel))


async def _dispatch(ctx, op, x_id: int, out_id: int, code: int, params: bytes) -> None:
    ctx.float_tensor(x_id, op)
    out = ctx.float_tensor(out_id, op)
    same_numel(ctx, op, x_id, out_id)
    if out.numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline("unary", {"wg_size": wg, "op": code}, half=ctx.half(out_id))
    uniform = ctx.uniform(params, f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, x_id), (1, out_id), (2, uniform)],
                 ctx.grid(-(-out.numel // wg)))


@register(*PLAIN, half=True)
async def build_plain(ctx, op):
    x_id, out_id = ctx.args(op, 2)
    await _dispatch(ctx, op, x_id, out_id, PLAIN[op.name], _params(ctx.tensor(out_id, op).numel))


@register("aten.gelu.default", half=True)
async def build_gelu(ctx, op):
    x_id, form_id, out_id = ctx.args(op, 3)
    form = ctx.graph.values[form_id]
    if isinstance(form, Null):
        form = Scalar("string", "none")
    if not (isinstance(form, Scalar) and form.kind == "string"):
        raise FormatError(f"{op.name}: value {form_id} should be a String, found {form.kind}",
                          field=ctx.where(op))
    if form.value not in GELU_FORMS:
        raise UnsupportedError(f"{op.name}: approximate={form.value!r} (expected 'none' or "
                               "'tanh')")
    await _dispatch(ctx, op, x_id, out_id, GELU_FORMS[form.value],
                    _params(ctx.tensor(out_id, op).numel))


def _bound(ctx, vid: int, op):
    return None if isinstance(ctx.graph.values[vid], Null) else number_arg(ctx, vid, op)


@register("aten.clamp.default", "aten.hardtanh.default", half=True)
async def build_clamp(ctx, op):
    x_id, low_id, high_id, out_id = ctx.args(op, 4)
    low, high = clamp_bounds(_bound(ctx, low_id, op), _bound(ctx, high_id, op),
                             lambda m: FormatError(f"{op.name}: {m}", field=ctx.where(op)))
    await _dispatch(ctx, op, x_id, out_id, CLAMP,
                    _params(ctx.tensor(out_id, op).numel, low, b=high))


@register("aten.pow.Tensor_Scalar", half=True)
async def build_pow(ctx, op):
    x_id, e_id, out_id = ctx.args(op, 3)
    code, e, int_exp, odd_exp = pow_params(number_arg(ctx, e_id, op))
    await _dispatch(ctx, op, x_id, out_id, code,
                    _params(ctx.tensor(out_id, op).numel, e, int_exp, odd_exp))


@register("aten.add.Scalar", half=True)
async def build_add_scalar(ctx, op):
    x_id, other_id, alpha_id, out_id = ctx.args(op, 4)
    # torch rounds both scalars to the tensor's float32 before multiplying (other as a
    # tensor cast, beyond range: inf; alpha checked, beyond range: refused).
    other = f32.to_f32(number_arg(ctx, other_id, op))
    alpha = f32.checked_f32(ctx.float_scalar(alpha_id, 1.0), f"{op.name}: alpha",
                            lambda m: FormatError(m, field=ctx.where(op)))
    shift = f32.to_f32(alpha * other)
    await _dispatch(ctx, op, x_id, out_id, ADD, _params(ctx.tensor(out_id, op).numel, shift))
