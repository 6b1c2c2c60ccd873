"""``et_vk.linear_dq8ca_q4gsw.default [x, input_scale, input_zp, weights, weight_sums,
weight_scales, group_size, bias, out]`` (linear_dq8.wgsl, linear_dq8_parts.wgsl): the 8da4w
linear of ExecuTorch's Vulkan export. ``x`` [..., K] is quantized per row (token) to int8
with the row's scale and zero point (from torchao.choose_qparams_affine, choose_qparams.py)
as torchao's ``quantize_affine`` does (``clamp(round(x * (1 / scale)) + zp, -128, 127)``,
half to even), then multiplied in integers with the 4-bit weights, one group at a time:
``out[m, n] = scale[m] * sum_g wscale[g, n] * (sum_k q[m, k] w[n, k] - zp[m] wsum[g, n])
+ bias[n]``. That is eager torchao's 8da4w model (dequantized activations times dequantized
weights) up to float rounding; custom_ops_lib.py's reference of this op skips the
activation quantization and is not what the exported model computes.

Layouts (docs/quantized-formats.md): ``weights`` uint8 [N, ceil8(K) / 2], the byte
``(w[2j+1] + 8) << 4 | (w[2j] + 8)``; ``weight_sums`` int32 [K / group, >= N] (the
serializer pads N to 8); ``weight_scales`` float32 [K / group, >= N] (padded to 4).

Variants (ops/variants.py, family ``linear_dq8``): ``mv-dp4`` / ``mv-i32``, one output
per invocation (decode); ``tile4-dp4`` / ``tile4-i32``, 4 x 4 outputs per invocation
(prefill); ``dp4`` sums four int8 products with ``dot4I8Packed`` (the WGSL feature
packed_4x8_integer_dot_product), ``i32`` unpacks them. Both need word-aligned weight
rows and a group of a multiple of 8; ``scalar`` (one element at a time) runs any shape.
None uses workgroup memory or barriers, so CPU adapters run them as they are.
"""

from __future__ import annotations

import math
import struct
from array import array

from ..errors import FormatError, UnsupportedError
from ..model.graph import Null, Scalar
from ..shaders.compose import Binding, Entry, Kernel, Uniform, sections
from .cpu_reference import to_f32
from .exec_ints import follow_actual_size
from .registry import register
from .variants import declare

FORMS = ("mv-dp4", "mv-i32", "tile4-dp4", "tile4-i32", "scalar")
MV_ROWS = 4  # up to this many rows (the bound) the matrix-vector form is chosen
TILE = 4  # rows and columns per invocation of the tiled form


def _word_form(aligned: bool, **_) -> bool:
    return aligned


def choose(traits, m: int, aligned: bool, **_) -> str:
    if not aligned:
        return "scalar"
    dot = "dp4" if getattr(traits, "packed_dot", False) else "i32"
    return f"{'mv' if m <= MV_ROWS else 'tile4'}-{dot}"


def supported(v: str, traits, aligned: bool = True, **_) -> str | None:
    if v.endswith("dp4") and not getattr(traits, "packed_dot", False):
        return "the adapter lacks WGSL's packed_4x8_integer_dot_product (dot4I8Packed)"
    if v != "scalar" and not aligned:
        return "the weight rows are not whole words or the group is not a multiple of 8"
    return None


VARIANTS = declare("linear_dq8", FORMS,
                   doc="mv: one output per lane (decode); tile4: 4x4 per lane (prefill); "
                       "dp4: dot4I8Packed, i32: unpacked; scalar: any shape",
                   choose=choose, supported=supported,
                   measure=lambda traits, **shape: list(FORMS))

PARAMS = Uniform(("rows", "u32"), ("n", "u32"), ("k", "u32"), ("xwords", "u32"),
                 ("row_bytes", "u32"), ("groups", "u32"), ("gsize", "u32"),
                 ("sum_stride", "u32"), ("scale_stride", "u32"), ("has_bias", "u32"),
                 ("col_tiles", "u32"), ("qwords", "u32"))
_BINDINGS = (Binding(0, "x"), Binding(1, "in_scale"),
             Binding(2, "in_zp", type="u32"), Binding(3, "weights", type="u32"),
             Binding(4, "sums", type="i32"), Binding(5, "wscales"),
             Binding(6, "bias"), Binding(7, "xq", "read_write", "u32"),
             Binding(8, "out", "read_write"))
_ENTRIES = (Entry("quantize", "quantize_word", "params.qwords"),
            Entry("mv", "mv_item", "params.rows * params.n"),
            Entry("tile", "tile_item", "((params.rows + 3u) / 4u) * params.col_tiles"),
            Entry("scalar", "scalar_item", "params.rows * params.n"))
KERNELS = {dot: Kernel("linear_dq8", _BINDINGS, PARAMS, entries=_ENTRIES,
                       generated=sections("linear_dq8_parts")[f"dot_{dot}"]
                       + sections("linear_dq8_parts")["div_rn"],
                       name=f"linear_dq8_{dot}")
           for dot in ("dp4", "i32")}
WG = 64


# --- reference -----------------------------------------------------------------------

def nibble(data, row_bytes: int, n: int, k: int) -> int:
    """The signed 4-bit weight [n, k]: low nibble for even k, high for odd."""
    byte = data[n * row_bytes + k // 2]
    return ((byte >> 4) if k & 1 else (byte & 15)) - 8


def quantize(v: float, scale: float, zp: int) -> int:
    """torchao quantize_affine of one f32 value to int8: x * (1 / scale), half to even."""
    return min(max(round(to_f32(v * to_f32(1.0 / scale))) + zp, -128), 127)


def reference(read, values, args):
    x_id, s_id, z_id, w_id, sum_id, ws_id, g_id, b_id, out_id = args
    d = dims(values, args, "et_vk.linear_dq8ca_q4gsw.default")
    x, scale, zp = read(x_id).values, read(s_id).values, read(z_id).values
    weights, sums, wscales = read(w_id).values, read(sum_id).values, read(ws_id).values
    bias = None if isinstance(values[b_id], Null) else read(b_id).values
    k, n, gs = d["k"], d["n"], d["gsize"]
    out = []
    for m in range(d["rows"]):
        q = [quantize(v, scale[m], int(zp[m])) for v in x[m * k:(m + 1) * k]]
        for c in range(n):
            acc = 0.0
            for g in range(d["groups"]):
                isum = sum(q[i] * nibble(weights, d["row_bytes"], c, i)
                           for i in range(g * gs, (g + 1) * gs))
                isum -= int(zp[m]) * sums[g * d["sum_stride"] + c]
                acc = to_f32(acc + to_f32(isum * wscales[g * d["scale_stride"] + c]))
            out.append(to_f32(to_f32(acc * scale[m]) + (bias[c] if bias else 0.0)))
    return out


# --- checks --------------------------------------------------------------------------

def dims(values, args, name: str, where: str | None = None) -> dict:
    """Every shape the op needs checked against x's K and the output's N; FormatError /
    UnsupportedError naming the op and the shape."""
    x_id, s_id, z_id, w_id, sum_id, ws_id, g_id, b_id, out_id = args

    def fail(msg):
        return FormatError(f"{name}: {msg}", field=where)

    ts = {}
    fl = ("float32", "float16")
    for vid, what, want in ((x_id, "x", fl), (s_id, "input scale", fl),
                            (z_id, "input zero point", ("int8",)), (w_id, "weights", ("uint8",)),
                            (sum_id, "weight sums", ("int32",)),
                            (ws_id, "weight scales", fl), (out_id, "out", fl)):
        t = values[vid]
        if getattr(t, "dtype", None) is None or t.dtype.name not in want:
            found = getattr(getattr(t, "dtype", None), "name", getattr(t, "kind", "?"))
            raise UnsupportedError(f"{name}: {what} (value {vid}) is {found}; expected "
                                   f"{' or '.join(want)}" + (f" ({where})" if where else ""))
        ts[what] = t
    x, out, w = ts["x"], ts["out"], ts["weights"]
    if not x.shape or tuple(out.shape[:-1]) != tuple(x.shape[:-1]):
        raise fail(f"x {list(x.shape)} and out {list(out.shape)} should share leading dims")
    k, n = x.shape[-1], out.shape[-1]
    rows = x.numel // k if k else 0
    gv = values[g_id]
    if not (isinstance(gv, Scalar) and gv.kind == "int"):
        raise fail(f"group size (value {g_id}) should be an Int, found {gv.kind}")
    gs = int(gv.value)
    if gs <= 0 or k % gs:
        raise fail(f"group size {gs} does not divide K = {k} (x {list(x.shape)})")
    groups = k // gs
    if len(w.shape) != 2 or w.shape[0] != n or 2 * w.shape[1] < k:
        raise fail(f"weights {list(w.shape)} should be [N = {n}, >= K / 2 = {-(-k // 2)}] "
                   f"packed 4-bit bytes")
    for what, minimum in (("weight sums", n), ("weight scales", n)):
        t = ts[what]
        if len(t.shape) != 2 or t.shape[0] != groups or t.shape[1] < n:
            raise fail(f"{what} {list(t.shape)} should be [K / group = {groups}, >= N = {n}]")
    for what in ("input scale", "input zero point"):
        if ts[what].numel != rows:
            raise fail(f"{what} {list(ts[what].shape)} should hold one value per row of x "
                       f"{list(x.shape)}: {rows}")
    bias = values[b_id]
    if not isinstance(bias, Null):
        if getattr(bias, "dtype", None) is None or bias.dtype.name not in fl or bias.numel < n:
            raise fail(f"bias (value {b_id}) should be a float tensor of >= N = {n} values")
    row_bytes = w.shape[1]
    return {"rows": rows, "n": n, "k": k, "gsize": gs, "groups": groups,
            "row_bytes": row_bytes, "sum_stride": ts["weight sums"].shape[1],
            "scale_stride": ts["weight scales"].shape[1], "has_bias": not isinstance(bias, Null),
            "aligned": row_bytes % 4 == 0 and gs % 8 == 0}


def check_finite(ctx, op, vid: int, what: str) -> None:
    """A constant's float values are finite (NaN or inf sums to NaN or inf, in C)."""
    data = ctx.constant_bytes(vid)
    if data is None:
        return
    if ctx.graph.values[vid].dtype.name == "float16":
        values = struct.unpack(f"<{len(data) // 2}e", bytes(data[:len(data) // 2 * 2]))
    else:
        values = array("f", bytes(data[:len(data) // 4 * 4]))
    if not math.isfinite(sum(values)):
        bad = next(i for i, v in enumerate(values) if not math.isfinite(v))
        raise FormatError(f"{op.name}: {what} (value {vid}) {list(ctx.graph.values[vid].shape)} "
                          f"holds {values[bad]} at {bad}", field=ctx.where(op))


# --- build ---------------------------------------------------------------------------

def _groups(form: str, rows: int, d: dict) -> int:
    if form.startswith("tile"):
        return -(-(-(-rows // TILE) * -(-d["n"] // TILE)) // WG)
    return -(-rows * d["n"] // WG)


def choices(graph, op) -> dict[str, str]:
    """The variant each typical adapter would run for this op (shown by inspect)."""
    try:
        d = dims(graph.values, op.args, op.name)
    except (FormatError, UnsupportedError, ValueError, TypeError, AttributeError):
        return {}  # malformed op: inspect shows it, the build refuses it
    return VARIANTS.typical(m=d["rows"], aligned=d["aligned"])


def out_size(op, shape, integer, values):
    """x's leading dims (the dynamic tokens) and the weights' N."""
    return {op.args[-1]: tuple(shape(op.args[0])[:-1]) + (values[op.args[3]].shape[0],)}


@register("et_vk.linear_dq8ca_q4gsw.default", reference=reference, args=9, sizes=out_size,
          choices=choices, half=True)
async def build_linear_dq8(ctx, op):
    args = ctx.args(op, 9)
    x_id, s_id, z_id, w_id, sum_id, ws_id, _g, b_id, out_id = args
    d = dims(ctx.graph.values, args, op.name, ctx.where(op))
    floats = [x_id, s_id, ws_id, out_id] + ([b_id] if d["has_bias"] else [])
    half = ctx.half(x_id)
    if any(ctx.half(v) != half for v in floats):
        raise UnsupportedError(f"{op.name}: its float tensors are stored as different types "
                               f"({ctx.where(op)})")
    check_finite(ctx, op, ws_id, "weight scales")
    if d["has_bias"]:
        check_finite(ctx, op, b_id, "bias")
    if d["rows"] * d["n"] == 0:
        return
    form = VARIANTS.pick(ctx, op, m=d["rows"], n=d["n"], k=d["k"], aligned=d["aligned"])
    forms = [(d["rows"], form)]
    if d["rows"] > MV_ROWS and form.startswith("tile") and ctx.dyn is not None \
            and ctx.dyn.is_dynamic(ctx.graph_key, out_id) and VARIANTS.forced(ctx.options) is None:
        forms.append((1, "mv" + form[len("tile4"):]))  # decode steps of a dynamic program
        ctx.note_kernel(op, twin=forms[1][1])
    xwords = -(-d["k"] // 4)
    xq = ctx.resources.buffer(4 * max(1, d["rows"] * xwords), f"{ctx.where(op)} int8 x")
    params = ctx.uniform(PARAMS.pack(
        rows=d["rows"], n=d["n"], k=d["k"], xwords=xwords, row_bytes=d["row_bytes"],
        groups=d["groups"], gsize=d["gsize"], sum_stride=d["sum_stride"],
        scale_stride=d["scale_stride"], has_bias=int(d["has_bias"]),
        col_tiles=-(-d["n"] // TILE), qwords=d["rows"] * xwords), f"{op.name} params")
    kernel = KERNELS["dp4" if form.endswith("dp4") else "i32"]
    pipeline = await ctx.pipeline(kernel, {"wg_size": WG}, "quantize", half)
    ctx.dispatch(op, pipeline, [(0, x_id), (1, s_id), (2, z_id), (7, xq), (9, params)],
                 ctx.grid(-(-d["rows"] * xwords // WG)))
    follow_actual_size(ctx, x_id, lambda e: -(-(e // d["k"]) * xwords // WG))
    bias = b_id if d["has_bias"] else ws_id
    bindings = [(1, s_id), (2, z_id), (3, w_id), (4, sum_id), (5, ws_id), (6, bias),
                (7, xq), (8, out_id), (9, params)]
    for i, (top, f) in enumerate(forms):
        low = forms[i + 1][0] if i + 1 < len(forms) else 0
        entry = "scalar" if f == "scalar" else f.split("-")[0].replace("tile4", "tile")
        pipe = await ctx.pipeline(KERNELS["dp4" if f.endswith("dp4") else "i32"],
                                  {"wg_size": WG}, entry, half)
        ctx.dispatch(op, pipe, bindings, ctx.grid(_groups(f, d["rows"], d)))
        follow_actual_size(ctx, out_id, lambda e, f=f, low=low, top=top:
                           _groups(f, -(-e // d["n"]), d) if low < -(-e // d["n"]) <= top
                           else 0, alternative=i > 0)
