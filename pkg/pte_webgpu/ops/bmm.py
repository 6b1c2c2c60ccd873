"""``aten.bmm.default [self [B,M,K], mat2 [B,K,N], out [B,M,N]]`` (shaders/bmm.wgsl): one
invocation per output element, f32 accumulation (also for f16 tensors). Attention written
by hand (q @ k^T, p @ v) lowers to it; ops/mm.py's mm and addmm over a [K, N] mat2 that
is not a constant run it too, with B = 1 and its epilogue beta * bias + alpha * product."""

from __future__ import annotations

from ..errors import FormatError, UnsupportedError
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from .common import elementwise_workgroup
from .exec_ints import follow_actual_size
from .registry import define
from .sizes import bmm as bmm_size

PARAMS = Uniform(("numel", "u32"), ("m", "u32"), ("k", "u32"), ("n", "u32"),
                 ("alpha", "f32"), ("beta", "f32"), ("has_bias", "u32"),
                 ("bias_row", "u32"), ("bias_col", "u32"))  # bias strides over [M, N]
KERNEL = Kernel("bmm", (Binding(0, "a"), Binding(1, "w"), Binding(2, "out", "read_write"),
                        Binding(4, "bias")), PARAMS, uniform_binding=3,
                snippets=("flat_index",), entries=(Entry("main", "bmm_item", "params.numel"),))


def _dims(a_shape, w_shape, out_shape, where):
    if len(a_shape) != 3 or len(w_shape) != 3 or a_shape[0] != w_shape[0] or \
            a_shape[2] != w_shape[1] or tuple(out_shape) != (a_shape[0], a_shape[1], w_shape[2]):
        raise FormatError(f"aten.bmm.default: shapes {list(a_shape)} @ {list(w_shape)} -> "
                          f"{list(out_shape)} are not [B,M,K] @ [B,K,N] -> [B,M,N]", field=where)
    return a_shape[0], a_shape[1], a_shape[2], w_shape[2]


async def record(ctx, op, a_id, w_id, out_id, m: int, k: int, n: int, numel: int,
                 alpha: float = 1.0, beta: float = 0.0, bias=None) -> None:
    """out = beta * bias + alpha * a @ w over B = numel / (M N) batches; ``bias``: (value
    id, row stride, col stride) of a bias broadcast over [M, N], or None."""
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, half=ctx.half(out_id))
    b_id, row, col = bias if bias is not None else (a_id, 0, 0)  # unread without a bias
    params = ctx.uniform(PARAMS.pack(numel=numel, m=m, k=k, n=n, alpha=alpha, beta=beta,
                                     has_bias=int(bias is not None), bias_row=row,
                                     bias_col=col), f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, a_id), (1, w_id), (2, out_id), (3, params), (4, b_id)],
                 ctx.grid(-(-numel // wg)))
    follow_actual_size(ctx, out_id, wg)


async def build(ctx, op):
    a_id, w_id, out_id = ctx.args(op, 3)
    a, w, out = (ctx.float_tensor(v, op) for v in (a_id, w_id, out_id))
    _, m, k, n = _dims(a.shape, w.shape, out.shape, ctx.where(op))
    if out.numel == 0:
        return
    await record(ctx, op, a_id, w_id, out_id, m, k, n, out.numel)


def reference(read, values, args):
    a, w = read(args[0]), read(args[1])
    b, m, k, n = _dims(a.shape, w.shape, values[args[2]].shape, "aten.bmm.default")
    av, wv, out = a.values, w.values, []
    for bi in range(b):
        for mi in range(m):
            row = av[(bi * m + mi) * k:(bi * m + mi + 1) * k]
            for ni in range(n):
                out.append(sum(x * wv[(bi * k + j) * n + ni] for j, x in enumerate(row)))
    return out


def sizes(op, shape, integer, values):
    """Dynamic B, M or N run as recorded (padded layout); a dynamic K would sum the padding."""
    if shape(op.args[0])[2] != values[op.args[0]].shape[2]:
        raise UnsupportedError(f"{op.name}: a contraction dim smaller than its bound "
                               f"({shape(op.args[0])[2]} of {values[op.args[0]].shape[2]})")
    return bmm_size(op, shape, integer, values)


define("aten.bmm.default", build, reference, 3, half=True, sizes=sizes)
