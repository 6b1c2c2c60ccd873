"""2-D matrix products: ``aten.mm.default [self [M,K], mat2 [K,N], out [M,N]]`` and
``aten.addmm.default [bias, mat1 [M,K], mat2 [K,N], beta, alpha, out [M,N]]`` (beta and
alpha Int or Double; the bias [N], [1,N], [M,1], [M,N] or 0-dim, broadcast over out).

A constant mat2 (or the constant an et_vk.prepack copies into it) is relaid at load into
[N, K] and runs the matmul family (ops/matmul.py: the variant chosen per shape and
adapter) when alpha and beta are 1 and the bias is a row of N; any other form runs bmm's
kernel (ops/bmm.py, B = 1) with its beta * bias + alpha * product epilogue. beta 0 leaves
the bias unread, as torch (a NaN there does not propagate).
"""

from __future__ import annotations

import math
from array import array

from ..errors import FormatError
from ..model import f32
from . import bmm, matmul
from .copying import broadcast_strides
from .registry import define

_ITEM = {2: "H", 4: "I"}  # element size -> array code: the relay moves bits


def _dims(a_shape, w_shape, out_shape, name: str, where: str = "") -> tuple[int, int, int]:
    if len(a_shape) != 2 or len(w_shape) != 2 or a_shape[1] != w_shape[0] or \
            tuple(out_shape) != (a_shape[0], w_shape[1]):
        raise FormatError(f"{name}: shapes {list(a_shape)} @ {list(w_shape)} -> "
                          f"{list(out_shape)} are not [M,K] @ [K,N] -> [M,N]", field=where)
    return a_shape[0], a_shape[1], w_shape[1]


def _constant_source(ctx, vid: int) -> int | None:
    """The constant tensor holding ``vid``'s values: itself, or an et_vk.prepack's source."""
    if ctx.graph.values[vid].is_constant:
        return vid
    for other in ctx.graph.ops:
        if other.name == "et_vk.prepack.default" and other.args[-1] == vid:
            src = other.args[0]
            return src if ctx.graph.values[src].is_constant else None
    return None


def transposed(data: bytes, rows: int, cols: int, itemsize: int) -> bytes:
    """A row-major [rows, cols] matrix's bytes as [cols, rows]."""
    src = array(_ITEM[itemsize], data[:rows * cols * itemsize])
    out = array(_ITEM[itemsize], bytes(rows * cols * itemsize))
    for c in range(cols):
        out[c * rows:(c + 1) * rows] = src[c::cols]
    return out.tobytes()


def _scale(ctx, op, vid: int, what: str) -> float:
    return f32.checked_f32(ctx.float_scalar(vid, 1.0), f"{op.name}: {what}",
                           lambda m: FormatError(m, field=ctx.where(op)))


async def _build(ctx, op, bias_id, a_id, w_id, out_id, beta: float, alpha: float) -> None:
    a, w, out = (ctx.float_tensor(v, op) for v in (a_id, w_id, out_id))
    m, k, n = _dims(a.shape, w.shape, out.shape, op.name, ctx.where(op))
    bias = None
    if bias_id is not None and beta != 0:
        b = ctx.float_tensor(bias_id, op)
        row, col = broadcast_strides(b.shape, (m, n), op.name)
        bias = (bias_id, row, col)
    if m * n == 0:
        return
    source = _constant_source(ctx, w_id)
    row_bias = bias is None or (bias[1] == 0 and bias[2] == 1)
    if source is not None and alpha == 1 and beta in (0, 1) and row_bias and k:
        size = ctx.graph.values[source].dtype.itemsize
        relaid = ctx.constant_buffer(transposed(ctx.constant_bytes(source), k, n, size),
                                     ctx.graph.values[source].dtype, f"{ctx.where(op)} mat2ᵀ")
        bindings = [(0, a_id), (1, relaid), (2, out_id),
                    (4, bias[0] if bias else a_id)]
        await matmul.product(ctx, op, bindings, m, n, k, bias is not None, out_id, n)
        return
    await bmm.record(ctx, op, a_id, w_id, out_id, m, k, n, m * n, alpha, beta, bias)


async def build_mm(ctx, op):
    a_id, w_id, out_id = ctx.args(op, 3)
    await _build(ctx, op, None, a_id, w_id, out_id, 0.0, 1.0)


async def build_addmm(ctx, op):
    bias_id, a_id, w_id, beta_id, alpha_id, out_id = ctx.args(op, 6)
    await _build(ctx, op, bias_id, a_id, w_id, out_id, _scale(ctx, op, beta_id, "beta"),
                 _scale(ctx, op, alpha_id, "alpha"))


def _product(a, w, m: int, k: int, n: int) -> list[float]:
    out = []
    for i in range(m):
        row = a.values[i * k:(i + 1) * k]
        out += [math.fsum(x * w.values[j * n + c] for j, x in enumerate(row)) for c in range(n)]
    return out


def reference_mm(read, values, args):
    a, w = read(args[0]), read(args[1])
    m, k, n = _dims(a.shape, w.shape, values[args[2]].shape, "aten.mm.default")
    return _product(a, w, m, k, n)


def reference_addmm(read, values, args):
    a, w = read(args[1]), read(args[2])
    m, k, n = _dims(a.shape, w.shape, values[args[5]].shape, "aten.addmm.default")
    beta = f32.to_f32(float(getattr(values[args[3]], "value", 1.0)))
    alpha = f32.to_f32(float(getattr(values[args[4]], "value", 1.0)))
    products = [alpha * p for p in _product(a, w, m, k, n)]
    if beta == 0:
        return products
    bias = read(args[0])
    row, col = broadcast_strides(bias.shape, (m, n), "aten.addmm.default")
    return [beta * bias.values[(i // n) * row + (i % n) * col] + p
            for i, p in enumerate(products)]


define("aten.mm.default", build_mm, reference_mm, 3, half=True)
define("aten.addmm.default", build_addmm, reference_addmm, 6, half=True)
