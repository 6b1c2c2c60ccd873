"""``et_vk.embedding_q4gsw.default [weights, scales, group_size, indices, is_linear_weight,
out]`` (embedding_q4.wgsl): a 4-bit groupwise symmetric embedding table, ``out[..., d] =
f32(w[ids[...], d]) * scales[ids[...], d / group]``, as ExecuTorch's custom_ops_lib.py
embedding_q4gsw_impl dequantizes it (``-E 4,32`` of the llama export).

``weights`` uint8 [V, D / 2]: byte j of a row holds elements 2j and 2j + 1, each stored
+ 8; ``is_linear_weight`` (True from the llama export) puts element 2j in the low nibble,
False in the high one. ``scales`` float32 [V, D / group]. An id outside [0, V) gives a
row of zeros and sets the op's id flag, so execute raises InputError as torch's embedding
does (runtime/id_checks.py), as aten.embedding here (ops/embedding.py).
"""

from __future__ import annotations

from ..errors import FormatError, InputError, UnsupportedError
from ..model.graph import Scalar
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from .common import elementwise_workgroup
from .exec_ints import follow_actual_size
from .linear_dq8 import check_finite
from .registry import register

NAME = "et_vk.embedding_q4gsw.default"
PARAMS = Uniform(("numel", "u32"), ("dim", "u32"), ("vocab", "u32"), ("row_bytes", "u32"),
                 ("gsize", "u32"), ("scale_stride", "u32"), ("low_first", "u32"))
KERNEL = Kernel("embedding_q4", (Binding(0, "weights", type="u32"),
                                 Binding(1, "scales"),
                                 Binding(2, "indices", type="i32"),
                                 Binding(3, "out", "read_write"),
                                 # count, claimed, position, value (runtime/id_checks.py)
                                 Binding(5, "flag", "read_write", "atomic<u32>")), PARAMS,
                uniform_binding=4, snippets=("bad_id",),
                entries=(Entry("main", "item", "params.numel"),))


def dims(values, args, where: str | None = None) -> dict:
    w_id, s_id, g_id, idx_id, lin_id, out_id = args

    def fail(msg):
        return FormatError(f"{NAME}: {msg}", field=where)

    for vid, what, want in ((w_id, "weights", ("uint8",)),
                            (s_id, "scales", ("float32", "float16")),
                            (idx_id, "indices", ("int32", "int64")),
                            (out_id, "out", ("float32", "float16"))):
        t = values[vid]
        if getattr(t, "dtype", None) is None or t.dtype.name not in want:
            found = getattr(getattr(t, "dtype", None), "name", getattr(t, "kind", "?"))
            raise UnsupportedError(f"{NAME}: {what} (value {vid}) is {found}; expected "
                                   f"{' or '.join(want)}" + (f" ({where})" if where else ""))
    w, s, ids, out = values[w_id], values[s_id], values[idx_id], values[out_id]
    if not out.shape or tuple(out.shape[:-1]) != tuple(ids.shape):
        raise fail(f"out {list(out.shape)} should be the indices' shape {list(ids.shape)} "
                   f"plus [D]")
    dim = out.shape[-1]
    g = values[g_id]
    if not (isinstance(g, Scalar) and g.kind == "int"):
        raise fail(f"group size (value {g_id}) should be an Int, found {g.kind}")
    gs = int(g.value)
    if gs <= 0 or dim % gs:
        raise fail(f"group size {gs} does not divide D = {dim} (out {list(out.shape)})")
    if len(w.shape) != 2 or 2 * w.shape[1] < dim:
        raise fail(f"weights {list(w.shape)} should be [V, >= D / 2 = {-(-dim // 2)}] packed "
                   "4-bit bytes")
    if len(s.shape) != 2 or s.shape[0] != w.shape[0] or s.shape[1] < dim // gs:
        raise fail(f"scales {list(s.shape)} should be [V = {w.shape[0]}, >= D / group = "
                   f"{dim // gs}]")
    lin = values[lin_id]
    if not (isinstance(lin, Scalar) and lin.kind == "bool"):
        raise fail(f"is_linear_weight (value {lin_id}) should be a Bool, found {lin.kind}")
    return {"vocab": w.shape[0], "dim": dim, "row_bytes": w.shape[1], "gsize": gs,
            "scale_stride": s.shape[1], "low_first": bool(lin.value)}


def element(data, d: dict, row: int, col: int) -> int:
    """The signed 4-bit element [row, col] of the table."""
    byte = data[row * d["row_bytes"] + col // 2]
    low = (col & 1) == 0 if d["low_first"] else (col & 1) == 1
    return ((byte & 15) if low else (byte >> 4)) - 8


def reference(read, values, args):
    d = dims(values, args)
    weights, scales, ids = read(args[0]).values, read(args[1]).values, read(args[3]).values
    out = []
    for pos, i in enumerate(ids):
        i = int(i)
        if not 0 <= i < d["vocab"]:
            raise InputError(f"{NAME}: id {i} at position {pos} is outside [0, {d['vocab']})")
        for c in range(d["dim"]):
            out.append(element(weights, d, i, c) * scales[i * d["scale_stride"] + c // d["gsize"]])
    return out


def out_size(op, shape, integer, values):
    return {op.args[-1]: tuple(shape(op.args[3])) + (values[op.args[-1]].shape[-1],)}


@register(NAME, half=True, reference=reference, args=6, sizes=out_size)
async def build_embedding_q4(ctx, op):
    args = ctx.args(op, 6)
    w_id, s_id, _g, idx_id, _lin, out_id = args
    d = dims(ctx.graph.values, args, ctx.where(op))
    if ctx.half(s_id) != ctx.half(out_id):
        raise UnsupportedError(f"{op.name}: scales and out are stored as different float "
                               f"types ({ctx.where(op)})")
    check_finite(ctx, op, s_id, "scales")
    numel = ctx.graph.values[out_id].numel
    if numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, half=ctx.half(out_id))
    uniform = ctx.uniform(PARAMS.pack(numel=numel, dim=d["dim"], vocab=d["vocab"],
                                      row_bytes=d["row_bytes"], gsize=d["gsize"],
                                      scale_stride=d["scale_stride"],
                                      low_first=int(d["low_first"])), f"{op.name} params")
    flag = ctx.id_check(idx_id, d["vocab"], op)
    ctx.dispatch(op, pipeline, [(0, w_id), (1, s_id), (2, idx_id), (3, out_id), (4, uniform),
                                (5, flag)], ctx.grid(-(-numel // wg)))
    follow_actual_size(ctx, out_id, wg)
