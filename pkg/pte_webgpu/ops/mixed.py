"""Elementwise ops over bools, ints and floats together (shaders/mixed.wgsl), with NumPy
broadcasting (0-dim operands included).

``TABLE`` is the one definition of each op: its name, argument count, tensor operand
count, the WGSL expression of the loaded operands ``x``, ``y``, ``z`` (f32 for float
tensors, i32 for int32/int64, u32 0/1 for bool; ``{s}`` is the scalar argument as the
same type as ``x``, ``{zx}``/``{zy}`` the zero of x's/y's type; the other placeholders
are named beside TABLE) and the CPU reference ``ref(x, y, z, s)`` (``s``: the scalar, or
x's type for rows without one). Comparisons and the logical ops give bool (two tensors
compared as one promoted type, as torch), the bitwise ops x's type (bool or int), the
div rounding modes float, or int for int operands; ``where`` gives its value operands'
type. The integer forms of ``aten.sub.Tensor`` (ops/binary.py sends int tensors on),
``aten.abs.default`` and ``aten.clamp.default`` (ops/unary.py does) and int/bool -> float
conversion (ops/view.py's ``_to_dim_order_copy``) live here too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ..errors import FormatError, UnsupportedError
from ..model.graph import Null, Scalar
from ..shaders.compose import Binding, Entry, Kernel, Uniform, fill
from . import cpu_reference as cpu
from .common import check_rank, elementwise_workgroup
from .copying import broadcast_strides
from .exec_ints import follow_actual_size
from .registry import define
from .sizes import broadcast


@dataclass(frozen=True)
class Mixed:
    name: str
    args: int  # with the output
    operands: int  # tensor operands, first in args
    wgsl: str
    ref: Callable  # (x, y, z, s) -> value
    out: str | None = None  # "bool"; "bits": bool or int as x (bitwise); None: y's (where) / x's
    promote: bool = False  # both operands compared or combined as one type (float if either is)


def _eq(x, s):
    return int(x == s)  # NaN equals nothing, -inf equals -inf


def _bits(v) -> int:
    return int(v)  # bool operands are 0/1: & and | on them give torch's bool results


def _div_floor(x, y):
    """torch's div(rounding_mode="floor"): Python's // on ints (0 for /0: torch raises),
    torch's fmod-based rule on floats, each step rounded to f32 (x infinite: NaN)."""
    if isinstance(x, int) and isinstance(y, int):
        return x // y if y else 0
    f = cpu.to_f32
    if y == 0:
        return cpu_div(x, y)
    if x != x or y != y or math.isinf(x):
        return math.nan
    mod = math.fmod(x, y)  # exact
    div = f(f(x - mod) / y)
    if mod and (y < 0) != (mod < 0):
        div = f(div - 1.0)
    if not div:
        return math.copysign(0.0, cpu_div(x, y))
    floored = float(math.floor(div))
    return floored + 1.0 if div - floored > 0.5 else floored


def _div_trunc(x, y):
    """torch's div(rounding_mode="trunc"): C division of ints (0 for /0: torch raises),
    trunc(x / y) of floats (the quotient rounded to f32 first, its sign kept at 0)."""
    if isinstance(x, int) and isinstance(y, int):
        if not y:
            return 0
        q = abs(x) // abs(y)
        return q if (x < 0) == (y < 0) else -q
    q = cpu.to_f32(cpu_div(x, y))
    return math.copysign(float(math.trunc(q)), q) if math.isfinite(q) else q


def cpu_div(x, y):
    if y:
        return x / y
    if x != x or x == 0:
        return math.nan
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


# Comparisons of two tensors promote both operands to one type (float if either is), as
# torch does; {t} is the output's WGSL type, {ones} x's all-ones (bool 1u, int -1i),
# {f} "f32" or "i32" for the div helpers of mixed.wgsl, {nan_x}/{nan_y} whether x/y is NaN
# (compilers lower != to an ordered compare, false at NaN), {nz_x}/{nz_y} x/y is nonzero
# (NaN is).
TABLE = [
    Mixed("aten.eq.Scalar", 3, 1, "u32(x == {s})", lambda x, y, z, s: _eq(x, s), "bool"),
    Mixed("aten.ne.Scalar", 3, 1, "u32(x != {s} || {nan_x})", lambda x, y, z, s: 1 - _eq(x, s), "bool"),
    Mixed("aten.le.Scalar", 3, 1, "u32(x <= {s})", lambda x, y, z, s: int(x <= s), "bool"),
    Mixed("aten.lt.Scalar", 3, 1, "u32(x < {s})", lambda x, y, z, s: int(x < s), "bool"),
    Mixed("aten.ge.Scalar", 3, 1, "u32(x >= {s})", lambda x, y, z, s: int(x >= s), "bool"),
    Mixed("aten.gt.Scalar", 3, 1, "u32(x > {s})", lambda x, y, z, s: int(x > s), "bool"),
    Mixed("aten.eq.Tensor", 3, 2, "u32(x == y)", lambda x, y, z, s: _eq(x, y), "bool", True),
    Mixed("aten.ne.Tensor", 3, 2, "u32(x != y || {nan_x} || {nan_y})",
          lambda x, y, z, s: 1 - _eq(x, y), "bool", True),
    Mixed("aten.le.Tensor", 3, 2, "u32(x <= y)", lambda x, y, z, s: int(x <= y), "bool", True),
    Mixed("aten.lt.Tensor", 3, 2, "u32(x < y)", lambda x, y, z, s: int(x < y), "bool", True),
    Mixed("aten.ge.Tensor", 3, 2, "u32(x >= y)", lambda x, y, z, s: int(x >= y), "bool", True),
    Mixed("aten.gt.Tensor", 3, 2, "u32(x > y)", lambda x, y, z, s: int(x > y), "bool", True),
    Mixed("aten.logical_not.default", 2, 1, "u32(x == {zx})",
          lambda x, y, z, s: int(x == 0), "bool"),
    Mixed("aten.logical_and.default", 3, 2, "u32({nz_x} && {nz_y})",
          lambda x, y, z, s: int(x != 0 and y != 0), "bool"),
    Mixed("aten.logical_or.default", 3, 2, "u32({nz_x} || {nz_y})",
          lambda x, y, z, s: int(x != 0 or y != 0), "bool"),
    Mixed("aten.bitwise_and.Tensor", 3, 2, "x & y", lambda x, y, z, s: _bits(x) & _bits(y),
          "bits", True),
    Mixed("aten.bitwise_or.Tensor", 3, 2, "x | y", lambda x, y, z, s: _bits(x) | _bits(y),
          "bits", True),
    Mixed("aten.bitwise_and.Scalar", 3, 1, "x & {t}({s})",
          lambda x, y, z, s: _bits(x) & int(s), "bits"),
    Mixed("aten.bitwise_or.Scalar", 3, 1, "x | {t}({s})",
          lambda x, y, z, s: _bits(x) | int(s), "bits"),
    Mixed("aten.bitwise_not.default", 2, 1, "x ^ {ones}",
          lambda x, y, z, s: 1 - x if s == "bool" else ~x, "bits"),
    # the two forms of aten.div.Tensor_mode (build_div_mode picks one by rounding_mode)
    Mixed("div_floor", 4, 2, "div_floor_{f}(x, y)", lambda x, y, z, s: _div_floor(x, y),
          None, True),
    Mixed("div_trunc", 4, 2, "div_trunc_{f}(x, y)", lambda x, y, z, s: _div_trunc(x, y),
          None, True),
    Mixed("aten.where.self", 4, 3, "select(z, y, x != {zx})",
          lambda x, y, z, s: y if x else z),
    Mixed("sub_int", 4, 2, "x - {s} * y", lambda x, y, z, s: x - s * y),
    Mixed("abs_int", 2, 1, "abs(x)", lambda x, y, z, s: abs(x)),
    # torch.clamp on ints: max with the low bound, then min with the high one
    Mixed("clamp_int", 4, 1, "min(max(x, params.n), params.m)",
          lambda x, y, z, s: min(max(x, s[0]), s[1])),
    Mixed("to_float", 2, 1, "f32(x)", lambda x, y, z, s: float(x), "float"),
]
ROW = {row.name: row for row in TABLE}

PARAMS = Uniform(("numel", "u32"), ("rank", "u32"), ("a", "f32"), ("n", "i32"), ("m", "i32"),
                 ("out_shape", "vec8"), ("a_strides", "vec8"), ("b_strides", "vec8"),
                 ("c_strides", "vec8"))
_WGSL_TYPE = {"float": "elem", "int": "i32", "bool": "u32"}
_ZERO = {"float": "0.0", "int": "0i", "bool": "0u"}
_ONES = {"int": "-1i", "bool": "1u"}  # bitwise_not's mask
_KERNELS: dict = {}


def type_of(dtype) -> str:
    name = dtype.name
    if name in ("float32", "float16"):
        return "float"
    if name in ("int32", "int64"):
        return "int"
    if name == "bool":
        return "bool"
    raise UnsupportedError(f"{name} tensors are not supported here (float, int32, int64, bool)")


def _nonzero(var: str, kind: str) -> str:
    return f"({var} != 0.0 || is_nan({var}))" if kind == "float" else f"{var} != {_ZERO[kind]}"


def operand_types(row: Mixed, types: tuple) -> tuple[str | None, str | None]:
    """(the type ``row`` computes its operands in, the output type) for operand ``types``;
    (None, None) where torch's promotion leads outside what the row takes."""
    if row.name == "aten.where.self":
        ok = types[0] == "bool" and types[1] == types[2]
        return (None, types[1]) if ok else (None, None)
    if row.name.endswith("_int"):  # sub_int, abs_int, clamp_int: int operands only
        return (None, "int") if set(types) == {"int"} else (None, None)
    common = "float" if "float" in types else "int" if "int" in types else "bool"
    if row.out == "bits":  # bool or int, x's type (both operands one type)
        ok = common != "float" and len(set(types)) == 1
        return (common, common) if ok else (None, None)
    if row.name.startswith("div_"):
        return (common, common) if common != "bool" else (None, None)
    return (common if row.promote else None, row.out or types[0])


def _kernel(row: Mixed, types: tuple, out_type: str, scalar_int: bool) -> Kernel:
    """The kernel of ``row`` for operand types ``types`` (declared once per combination)."""
    key = (row.name, types, out_type, scalar_int)
    if key not in _KERNELS:
        names = "abc"[:len(types)]
        bindings = tuple(Binding(i, n, type=_WGSL_TYPE[t]) for i, (n, t) in enumerate(zip(names, types)))
        bindings += (Binding(3, "out", "read_write", type=_WGSL_TYPE[out_type]),)
        common = operand_types(row, types)[0]
        casts = ["f32" if t == "float" else "" for t in types]
        if row.promote and len(set(types)) > 1:  # one type for both (float, else int)
            casts = ["f32" if common == "float" else "i32"] * len(types)
        if row.out == "bool" and "{s}" in row.wgsl:  # a comparison: x as the scalar's type
            casts[0] = "i32" if scalar_int else "f32"
        loads = "".join(fill("generated", "mixed_load", var=v, cast=cast, operand=n, lane=c)
                        for v, n, cast, c in zip("xyz", names, casts, "xyz"))
        expr = row.wgsl.format(s="params.n" if scalar_int else "params.a",
                               zx=_ZERO[types[0]], zy=_ZERO[types[min(1, len(types) - 1)]],
                               t=_WGSL_TYPE[out_type], ones=_ONES.get(types[0], ""),
                               f="f32" if common == "float" else "i32",
                               nan_x="is_nan(x)" if casts[0] == "f32" else "false",
                               nan_y="is_nan(y)" if casts[1:2] == ["f32"] else "false",
                               nz_x=_nonzero("x", types[0]), nz_y=_nonzero("y", types[-1]))
        store = fill("generated", "mixed_store_float" if out_type == "float" else "mixed_store",
                     expr=expr)
        item = fill("generated", "mixed_item", loads=loads, store=store)
        _KERNELS[key] = Kernel("mixed", bindings, PARAMS, uniform_binding=4,
                               snippets=("bits", "shape_index"), generated=item,
                               entries=(Entry("main", "item", "params.numel"),),
                               half="float" in types or out_type == "float",
                               name="mixed_" + "_".join([row.name, *types, out_type,
                                                         "i" if scalar_int else "f"]))
    return _KERNELS[key]


def _scalar(row: Mixed, values, args, x_type: str, where: str):
    """(scalar value, whether the kernel compares it as i32)."""
    if row.name == "clamp_int":
        return _int_bounds(values, args, where), True
    if row.name == "sub_int":
        v = values[args[2]]
        alpha = 1 if not isinstance(v, Scalar) else v.value
        if not isinstance(alpha, int) or isinstance(alpha, bool):
            raise UnsupportedError(f"{where}: integer sub with alpha {alpha!r}")
        return alpha, True
    if row.operands != 1 or row.args != 3:
        return 0, False
    v = values[args[1]]
    if not (isinstance(v, Scalar) and v.kind in ("int", "double", "bool")):
        raise FormatError(f"{row.name}: value {args[1]} should be a Scalar, found {v.kind}",
                          field=where)
    if x_type != "float" and v.kind != "double":
        return int(v.value), True
    if row.out == "bits":
        raise UnsupportedError(f"{where}: {row.name} with the Scalar {v.value!r} "
                               f"({x_type} tensor): bool or int operands only")
    return cpu.to_f32(float(v.value)), False


I32_MIN, I32_MAX = -2 ** 31, 2 ** 31 - 1


def _int_bounds(values, args, where: str) -> tuple[int, int]:
    """clamp's (min, max) on int tensors: Int or Null (no bound); a Double is refused."""
    bounds = []
    for vid, none in ((args[1], I32_MIN), (args[2], I32_MAX)):
        v = values[vid]
        if isinstance(v, Scalar) and v.kind == "int":
            bounds.append(min(max(int(v.value), I32_MIN), I32_MAX))
        elif isinstance(v, Null):
            bounds.append(none)
        else:
            raise UnsupportedError(f"{where}: clamp of an integer tensor with a {v.kind} bound")
    return tuple(bounds)


async def dispatch(ctx, op, row: Mixed, args, into=None) -> None:
    """``into``: a Buffer written instead of the output tensor's own (same layout)."""
    ids = args[:row.operands]
    out_id = args[-1]
    tensors = [ctx.tensor(v, op) for v in ids]
    out = ctx.tensor(out_id, op)
    where = ctx.where(op)
    try:
        types = tuple(type_of(t.dtype) for t in tensors)
        out_type = type_of(out.dtype)
    except UnsupportedError as e:
        raise UnsupportedError(f"{op.name} ({where}): {e}") from None
    if out_type != operand_types(row, types)[1]:
        raise UnsupportedError(f"{op.name} ({where}): operands {list(types)} -> {out_type} "
                               "are not supported")
    halves = {ctx.half(v) for v, t in zip(list(ids) + [out_id], list(types) + [out_type])
              if t == "float"}
    if len(halves) > 1:
        raise UnsupportedError(f"{op.name} ({where}): float16 and float32 operands mixed")
    check_rank(op, out.shape)
    strides = [broadcast_strides(t.shape, out.shape, op.name) for t in tensors]
    if out.numel == 0:
        return
    scalar, scalar_int = _scalar(row, ctx.graph.values, args, types[0], where)
    kernel = _kernel(row, types, out_type, scalar_int)
    lo, hi = scalar if isinstance(scalar, tuple) else (scalar, 0)
    params = PARAMS.pack(numel=out.numel, rank=len(out.shape),
                         a=scalar if not scalar_int else 0, n=lo if scalar_int else 0, m=hi,
                         out_shape=out.shape, **dict(zip(("a_strides", "b_strides", "c_strides"),
                                                         strides)))
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(kernel, {"wg_size": wg}, half=bool(halves and halves.pop()))
    bindings = [(i, v) for i, v in enumerate(ids)] + [(3, out_id if into is None else into),
                                                     (4, ctx.uniform(params, f"{op.name} params"))]
    ctx.dispatch(op, pipeline, bindings, ctx.grid(-(-out.numel // wg)))
    if into is None:
        follow_actual_size(ctx, out_id, wg)


def _build(row: Mixed):
    async def build(ctx, op):
        await dispatch(ctx, op, row, ctx.args(op, row.args))
    return build


async def sub_int(ctx, op) -> None:
    """``aten.sub.Tensor`` on int32/int64 tensors (wrapping in int32, as stored)."""
    await dispatch(ctx, op, ROW["sub_int"], ctx.args(op, 4))


async def clamp_int(ctx, op) -> None:
    """``aten.clamp.default`` on int32/int64 tensors with Int or Null bounds (the index
    arithmetic F.pad's replicate mode decomposes into)."""
    await dispatch(ctx, op, ROW["clamp_int"], ctx.args(op, 4))


async def abs_int(ctx, op) -> None:
    """``aten.abs.default`` on int32/int64 tensors (the plan kernel ``aten::abs.out`` of
    the index arithmetic F.pad's reflect mode decomposes into)."""
    await dispatch(ctx, op, ROW["abs_int"], ctx.args(op, 2))


async def to_float(ctx, op, x_id: int, out_id: int, into=None) -> None:
    """int32/int64/bool -> float (``_to_dim_order_copy``; ops/view.py sends it here);
    ``into``: a scratch Buffer written instead of out."""
    await dispatch(ctx, op, ROW["to_float"], (x_id, out_id), into=into)


def _reference(row: Mixed):
    def fn(read, values, args):
        arrays = [read(v) for v in args[:row.operands]]
        out_shape = values[args[-1]].shape
        maps = [cpu.broadcast_index_map(a.shape, out_shape) for a in arrays]
        x_type = type_of(values[args[0]].dtype)
        s = _scalar(row, values, args, x_type, row.name)[0] \
            if row.args > row.operands + 1 else x_type
        n = math.prod(out_shape)
        cols = [[a.values[i] for i in m] for a, m in zip(arrays, maps)]
        cols += [[None] * n] * (3 - len(cols))
        return [row.ref(x, y, z, s) for x, y, z in zip(*cols)]
    return fn


_DIV_MODES = {"floor": "div_floor", "trunc": "div_trunc"}


def _div_mode(values, args, where: str) -> Mixed:
    mode = values[args[2]]
    if not (isinstance(mode, Scalar) and mode.kind == "string" and mode.value in _DIV_MODES):
        shown = mode.value if isinstance(mode, Scalar) else mode.kind
        raise FormatError(f"aten.div.Tensor_mode: rounding_mode {shown!r}, expected "
                          "'floor' or 'trunc'", field=where)
    return ROW[_DIV_MODES[mode.value]]


async def build_div_mode(ctx, op):
    """``aten.div.Tensor_mode [self, other, rounding_mode: String, out]``."""
    args = ctx.args(op, 4)
    await dispatch(ctx, op, _div_mode(ctx.graph.values, args, ctx.where(op)), args)


def _reference_div_mode(read, values, args):
    return _reference(_div_mode(values, args, "aten.div.Tensor_mode"))(read, values, args)


define("aten.div.Tensor_mode", build_div_mode, _reference_div_mode, 4, half=True,
       sizes=broadcast)
for _row in TABLE:
    if _row.name not in ("sub_int", "abs_int", "clamp_int", "to_float", "div_floor", "div_trunc"):
        # elementwise: correct inside the padded layout of dynamic shapes as recorded
        define(_row.name, _build(_row), _reference(_row), _row.args, half=True, sizes=broadcast)
