"""Elementwise unary ops (shaders/unary.wgsl), ``[self, ..., out]`` on same-shape tensors.

``TABLE`` is the one definition of each op: its name, the WGSL expression of ``v`` (f32)
that the shader's ``apply`` switch is generated from, and the CPU reference of one value
``ref(v, s)``; ``s`` holds the op's scalars (``a``, ``b``, ``flag``, ``odd``: the
shader's ``params``), which ``scalars(values, args, where)`` reads from the op's
arguments for both the GPU and the reference. Rows whose name is not a torch op
(``square``, ``round_to_half``) are kernels other ops pick. The functions the expressions
call are shaders/f32_math.wgsl; ops/fused_elementwise.py runs chains of these rows (and
binary.py's) in one kernel.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ..errors import FormatError, UnsupportedError
from ..model import f32
from ..model.graph import Null, Scalar
from ..shaders.compose import Binding, Entry, Kernel, Uniform, cases, fill
from . import cpu_reference as cpu
from . import sizes
from .args import scalar_value
from .common import elementwise_workgroup, same_numel
from .exec_ints import follow_actual_size
from .registry import define

INT_EXP_LIMIT = 1 << 24  # beyond this every f32 is an even integer anyway


@dataclass(frozen=True)
class Unary:
    name: str
    wgsl: str  # expression of v: f32
    ref: Callable  # (v, scalars) -> float
    args: int = 2  # [self, ..., out]
    scalars: Callable | None = None  # (values, args, where) -> dict of params fields
    torch: bool = True  # registered as an op (else a kernel other ops pick)


# --- scalar arguments (shared by the GPU build and the reference) ------------------------
def pow_params(exponent) -> tuple[int, float, int, int]:
    """(table row, exponent, integer flag, odd flag) for ``pow(x, exponent)``."""
    e = float(exponent)
    if e == 2.0:
        return SQUARE, e, 0, 0
    is_int = math.isfinite(e) and e == int(e) and abs(e) < INT_EXP_LIMIT
    return POW, e, int(is_int), int(is_int and int(e) % 2 == 1)


def _pow_scalars(values, args, where):
    row, e, is_int, odd = pow_params(scalar_value(values, args[1], where))
    return {"row": row, "a": e, "flag": is_int, "odd": odd}


def clamp_bounds(low, high, error=FormatError) -> tuple[float, float]:
    """float32 (min, max) from Int/Double values or None (no bound: -inf / +inf); a
    finite bound beyond float32 raises ``error``, as torch's Scalar.to<float>() does."""
    return (-math.inf if low is None else f32.checked_f32(low, "clamp min", error),
            math.inf if high is None else f32.checked_f32(high, "clamp max", error))


def _clamp_scalars(values, args, where):
    a, b = clamp_bounds(*(scalar_value(values, i, where, optional=True) for i in args[1:3]),
                        error=lambda m: FormatError(m, field=where))
    return {"a": a, "b": b}


def _add_scalars(values, args, where):
    # torch rounds both scalars to the tensor's float32 before multiplying: other as a
    # tensor cast (beyond the range: inf), alpha checked (beyond the range: refused).
    other = f32.to_f32(scalar_value(values, args[1], where))
    alpha = f32.checked_f32(scalar_value(values, args[2], where, optional=True, default=1.0),
                            "alpha", lambda m: FormatError(m, field=where))
    return {"a": f32.to_f32(alpha * other)}


def _mul_scalars(values, args, where):
    return {"a": cpu.to_f32(float(scalar_value(values, args[1], where)))}


def _gelu_scalars(values, args, where):
    value = values[args[1]]
    if isinstance(value, Null):
        form = "none"
    elif isinstance(value, Scalar) and value.kind == "string":
        form = value.value
    else:
        raise FormatError(f"value {args[1]} should be a String, found {value.kind}",
                          field=where)
    if form not in ("none", "tanh"):
        raise UnsupportedError(f"{where}: approximate={form!r} (expected 'none' or 'tanh')")
    return {"flag": int(form == "tanh")}


def _slope_scalars(values, args, where):
    return {"a": f32.checked_f32(scalar_value(values, args[1], where, optional=True, default=0.01),
                                 "negative_slope", lambda m: FormatError(m, field=where))}


# --- reference math of one value ------------------------------------------------------
def _finite_or_nan(fn):
    return lambda v, s: fn(v) if math.isfinite(v) else math.nan


def _integral(fn):
    """floor / ceil / round-half-even keeping the sign of zero; inf and NaN pass."""
    return lambda v, s: math.copysign(float(fn(v)), v) if math.isfinite(v) else v


def _sigmoid(v: float) -> float:
    if v >= 0:
        return 1.0 / (1.0 + math.exp(-v))
    e = math.exp(v)  # v < 0 or NaN: exp cannot overflow
    return e / (1.0 + e)


def _odd_integer(e: float) -> bool:
    return math.isfinite(e) and e == int(e) and int(e) % 2 == 1


def _pow(x: float, e: float) -> float:
    try:
        return math.pow(x, e)
    except OverflowError:
        return math.copysign(math.inf, x) if _odd_integer(e) else math.inf
    except ValueError:  # 0 to a negative power, or a negative base to a fractional one
        if x == 0:
            return math.copysign(math.inf, x) if _odd_integer(e) else math.inf
        return math.nan


def _gelu(v: float, s) -> float:
    if s["flag"]:  # x/2 (1 + tanh(u)) = x / (1 + e^{-2u}): no cancellation for x < 0
        return v / (1.0 + cpu.exp(-2.0 * math.sqrt(2.0 / math.pi) * (v + 0.044715 * v ** 3)))
    return 0.5 * v * math.erfc(-v / math.sqrt(2.0))  # -inf gives NaN (-inf * 0), as torch


def _clamp(v: float, low: float, high: float) -> float:
    """torch.clamp: below ``low`` -> low, then above ``high`` -> high; NaN stays NaN."""
    v = low if v < low else v
    return high if v > high else v


def _log(v: float) -> float:
    if v != v or v < 0:
        return math.nan
    return math.log(v) if v else -math.inf


def _reciprocal(v: float) -> float:
    return 1.0 / v if v else math.copysign(math.inf, v)


def _relu6_shift(v: float) -> float:
    return _clamp(v + 3.0, 0.0, 6.0) / 6.0


# One line per op: name, WGSL expression of v, reference of (v, scalars), then arguments.
TABLE = [
    Unary("aten.rsqrt.default", "1.0 / sqrt(v)", lambda v, s: cpu.rsqrt(v)),
    Unary("aten.sigmoid.default", "sigmoid(v)", lambda v, s: _sigmoid(v)),
    Unary("square", "v * v", lambda v, s: v * v, torch=False),
    Unary("aten.pow.Tensor_Scalar", "pow_scalar(v)", lambda v, s: _pow(v, s["a"]), 3,
          _pow_scalars),
    Unary("aten.add.Scalar", "v + params.a", lambda v, s: v + s["a"], 4, _add_scalars),
    Unary("aten.mul.Scalar", "v * params.a", lambda v, s: v * s["a"], 3, _mul_scalars),
    Unary("round_to_half", "round_half(v)", lambda v, s: cpu.round_one(v, "e"), torch=False),
    Unary("aten.tanh.default", "tanh_f32(v)", lambda v, s: math.tanh(v)),
    Unary("aten.gelu.default", "gelu(v)", _gelu, 3, _gelu_scalars),
    Unary("aten.relu.default", "select(v, 0.0, below_zero(v))",
          lambda v, s: 0.0 if v < 0 else v),  # NaN and -0 pass through, as torch
    Unary("aten.exp.default", "exp_f32(v)", lambda v, s: cpu.exp(v)),
    Unary("aten.neg.default", "bitcast<f32>(bitcast<u32>(v) ^ 0x80000000u)", lambda v, s: -v),
    Unary("aten.abs.default", "bitcast<f32>(bitcast<u32>(v) & 0x7fffffffu)",
          lambda v, s: abs(v)),
    Unary("aten.sqrt.default", "sqrt_f32(v)",
          lambda v, s: math.nan if v < 0 else math.sqrt(v)),
    Unary("aten.clamp.default", "clamp_f32(v, params.a, params.b)",
          lambda v, s: _clamp(v, s["a"], s["b"]), 4, _clamp_scalars),
    Unary("aten.hardtanh.default", "clamp_f32(v, params.a, params.b)",
          lambda v, s: _clamp(v, s["a"], s["b"]), 4, _clamp_scalars),
    Unary("aten.sin.default", "sin_f32(v)", _finite_or_nan(math.sin)),
    Unary("aten.cos.default", "cos_f32(v)", _finite_or_nan(math.cos)),
    Unary("aten.log.default", "log_f32(v)", lambda v, s: _log(v)),
    Unary("aten.round.default", "round(v)", _integral(round)),  # half to even
    Unary("aten.floor.default", "floor(v)", _integral(math.floor)),
    Unary("aten.ceil.default", "ceil(v)", _integral(math.ceil)),
    Unary("aten.sign.default", "sign_f32(v)",
          lambda v, s: 1.0 if v > 0 else -1.0 if v < 0 else 0.0),
    Unary("aten.reciprocal.default", "reciprocal_f32(v)", lambda v, s: _reciprocal(v)),
    Unary("aten.hardswish.default", "v * relu6_shift(v)", lambda v, s: v * _relu6_shift(v)),
    Unary("aten.hardsigmoid.default", "relu6_shift(v)", lambda v, s: _relu6_shift(v)),
    Unary("aten.silu.default", "silu_f32(v)", lambda v, s: v / (1.0 + cpu.exp(-v))),
    Unary("aten.leaky_relu.default", "select(v, v * params.a, below_zero(v))",
          lambda v, s: v * s["a"] if v < 0 else v, 3, _slope_scalars),
]
ROW = {row.name: i for i, row in enumerate(TABLE)}
SQUARE, POW, ROUND_HALF = ROW["square"], ROW["aten.pow.Tensor_Scalar"], ROW["round_to_half"]

PARAMS = Uniform(("numel", "u32"), ("a", "f32"), ("b", "f32"), ("flag", "u32"),
                 ("odd", "u32"), ("inf", "f32"), ("nan", "f32"))
KERNEL = Kernel(
    "unary", (Binding(0, "x"), Binding(1, "y", "read_write")), PARAMS,
    snippets=("bits", "nan_minmax"), entries=(Entry("main", "item", "params.numel"),),
    library=("f32_math",),
    generated=fill("generated", "apply", cases=cases([row.wgsl for row in TABLE])))


def _scalars(row: Unary, values, args, where) -> dict:
    return row.scalars(values, args, where) if row.scalars else {}


async def _dispatch(ctx, op, x_id: int, out_id: int, row: int, scalars: dict) -> None:
    ctx.float_tensor(x_id, op)
    out = ctx.float_tensor(out_id, op)
    same_numel(ctx, op, x_id, out_id)
    if out.numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg, "op": row}, half=ctx.half(out_id))
    params = PARAMS.pack(numel=out.numel, inf=math.inf, nan=math.nan, **scalars)
    ctx.dispatch(op, pipeline, [(0, x_id), (1, out_id), (2, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-out.numel // wg)))
    follow_actual_size(ctx, out_id, wg)


async def round_to_half(ctx, op, x_id: int, out_id: int) -> None:
    """float32 -> float16 values (both held as f32): round to float16's precision."""
    await _dispatch(ctx, op, x_id, out_id, ROUND_HALF, {})


async def round_buffer_to_half(ctx, op, src, out_id: int) -> None:
    """Like ``round_to_half`` from a scratch Buffer holding out's f32 values."""
    out = ctx.float_tensor(out_id, op)
    if out.numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg, "op": ROUND_HALF})
    params = PARAMS.pack(numel=out.numel, inf=math.inf, nan=math.nan)
    ctx.dispatch(op, pipeline, [(0, src), (1, out_id), (2, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-out.numel // wg)))
    follow_actual_size(ctx, out_id, wg)


async def build(ctx, op):
    if op.name in ("aten.abs.default", "aten.clamp.default") and \
            ctx.tensor(op.args[-1], op).dtype.name in ("int32", "int64"):
        from .mixed import abs_int, clamp_int  # integer operands: a kernel of their own
        return await (abs_int if op.name == "aten.abs.default" else clamp_int)(ctx, op)
    row = TABLE[ROW[op.name]]
    args = ctx.args(op, row.args)
    scalars = _scalars(row, ctx.graph.values, args, ctx.where(op))
    await _dispatch(ctx, op, args[0], args[-1], scalars.pop("row", ROW[op.name]), scalars)


def _reference(row: Unary):
    def fn(read, values, args):
        scalars = _scalars(row, values, args, row.name)
        ref = TABLE[scalars.pop("row")].ref if "row" in scalars else row.ref
        return [ref(v, scalars) for v in read(args[0]).values]
    return fn


for _row in TABLE:
    if _row.torch:
        define(_row.name, build, _reference(_row), _row.args, half=True,
               sizes=sizes.same_as_first,
               pointwise=("unary", ROW[_row.name]) if _row.args == 2 and not _row.scalars
               else None)
