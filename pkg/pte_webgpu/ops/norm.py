"""``aten.native_layer_norm.default [input, normalized_shape, weight|Null, bias|Null, eps,
out_list]`` (shaders/norm.wgsl): one workgroup per row, a row being the trailing dims
that ``normalized_shape`` names, flattened. ``aten.native_group_norm.default [input,
weight|Null, bias|Null, N, C, HxW, group, eps, out_list]`` (GroupNorm, affine or not): the
same kernel, a row being one group of one sample (C/group channels of HxW elements,
contiguous), the weight and bias taken per channel; mean and rstd are (N, group).

``out_list`` is a ValueList ``[out, mean, rstd]``: ``out`` has the input's shape, ``mean``
and ``rstd`` one value per row (the input's shape with the normalized dims set to 1).
One dispatch writes all three. A Null weight or bias is 1 or 0 (the shader skips it);
a Null eps is float32's machine epsilon, as docs/FORMATS.md §5.4 says of the Vulkan
delegate (torch always passes one).
"""

from __future__ import annotations

import math
from math import prod

from ..errors import FormatError, UnsupportedError
from ..model.graph import ListValue, Null
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from . import cpu_reference as cpu
from .args import int_arg, int_list, int_list_arg, number
from .common import elementwise_workgroup, pow2_workgroup
from .exec_ints import follow_actual_size
from .registry import define
from .variants import declare

F32_EPS = 2.0 ** -23  # eps when the graph has none (docs/FORMATS.md §5.4)

PARAMS = Uniform(("rows", "u32"), ("width", "u32"), ("eps", "f32"), ("groups", "u32"),
                 ("inner", "u32"))
# An absent weight or bias binds the input (read-only, never read by the shader).
KERNEL = Kernel("norm", (Binding(0, "x"), Binding(1, "weight"), Binding(2, "bias"),
                         Binding(3, "y", "read_write"), Binding(4, "mean_out", "read_write"),
                         Binding(5, "rstd_out", "read_write")), PARAMS,
                snippets=("bits", "nan_minmax", "tree"),
                entries=(Entry("main", "normalize_row", "params.rows", per="group"),
                         Entry("rows", "whole_row", "params.rows")))
# A workgroup per row with a halving tree on GPUs; on CPU adapters, where barriers cost
# most, one row per invocation once there are rows enough to spread over the threads.
VARIANTS = declare("norm", ("tree", "row"), doc="tree: a workgroup per row; row: a row "
                   "per invocation, no barrier",
                   choose=lambda traits, rows, width: "row" if traits.is_cpu and rows >= 32
                   else "tree")
ROW_WG = 16  # rows per workgroup in the "row" form


def optional_terms(ctx, vid: int, op, width: int, what: str, optional: bool = True):
    """A weight, bias or statistics tensor of ``width`` elements; None for Null where
    ``optional`` (FormatError naming ``what`` otherwise)."""
    if optional and isinstance(ctx.graph.values[vid], Null):
        return None
    t = ctx.float_tensor(vid, op)
    if t.numel != width:
        raise FormatError(f"{op.name}: {what} has {t.numel} elements, expected {width} "
                          "(the normalized width or the channels)", field=ctx.where(op))
    return vid


def _outputs(ctx, op, out_list_id: int) -> list[int]:
    value = ctx.graph.values[out_list_id]
    if not (isinstance(value, ListValue) and value.kind == "value_list"
            and len(value.items) == 3):
        raise FormatError(f"{op.name}: the output should be a ValueList [out, mean, rstd], "
                          f"found {value.kind}", field=ctx.where(op))
    return [int(v) for v in value.items]


async def build_layer_norm(ctx, op):
    x_id, shape_id, w_id, b_id, eps_id, list_id = ctx.args(op, 6)
    x = ctx.float_tensor(x_id, op)
    out_id, mean_id, rstd_id = _outputs(ctx, op, list_id)
    out = ctx.float_tensor(out_id, op)
    norm_shape = tuple(int_list_arg(ctx, shape_id, op))
    k = len(norm_shape)
    if not 1 <= k <= len(x.shape) or tuple(x.shape[len(x.shape) - k:]) != norm_shape:
        raise FormatError(f"{op.name}: normalized_shape {list(norm_shape)} is not the "
                          f"trailing shape of the input {list(x.shape)}", field=ctx.where(op))
    width = prod(norm_shape)
    rows = x.numel // width if width else prod(x.shape[:len(x.shape) - k])
    if tuple(out.shape) != tuple(x.shape):
        raise FormatError(f"{op.name}: output shape {list(out.shape)} differs from input "
                          f"{list(x.shape)}", field=ctx.where(op))
    weight = optional_terms(ctx, w_id, op, width, "weight")
    bias = optional_terms(ctx, b_id, op, width, "bias")
    if rows and not width:
        raise UnsupportedError(f"{op.name}: normalizing over an empty shape "
                               f"{list(norm_shape)}")
    await _normalize(ctx, op, x_id, (weight, bias), (out_id, mean_id, rstd_id), rows, width,
                     ctx.float_scalar(eps_id, F32_EPS))


async def _normalize(ctx, op, x_id: int, affine, outs, rows: int, width: int, eps: float,
                     groups: int = 1, inner: int = 1) -> None:
    """The dispatch both norms share: ``rows`` rows of ``width`` elements, the affine
    terms indexed by channel ((row % groups) * width + j) / inner (layer norm: j)."""
    weight, bias = affine
    out_id, mean_id, rstd_id = outs
    for vid, what in ((mean_id, "mean"), (rstd_id, "rstd")):
        if ctx.float_tensor(vid, op).numel != rows:
            raise FormatError(f"{op.name}: {what} has {ctx.graph.values[vid].numel} "
                              f"elements, expected one per row ({rows})", field=ctx.where(op))
    if rows == 0:
        return  # nothing to normalize
    form = VARIANTS.pick(ctx, op, rows=rows, width=width)
    row_form = form == "row"
    wg = min(ROW_WG, elementwise_workgroup(ctx)) if row_form else pow2_workgroup(ctx, width)
    constants = {"wg_size": wg, "has_weight": int(weight is not None),
                 "has_bias": int(bias is not None)}
    pipeline = await ctx.pipeline(KERNEL, constants, "rows" if row_form else "main",
                                  half=ctx.half(x_id))
    params = ctx.uniform(PARAMS.pack(rows=rows, width=width, eps=eps, groups=groups,
                                     inner=inner), f"{op.name} params")
    # An absent weight or bias binds the input (read-only, never read by the shader).
    bindings = [(0, x_id), (1, x_id if weight is None else weight),
                (2, x_id if bias is None else bias), (3, out_id), (4, mean_id),
                (5, rstd_id), (6, params)]
    ctx.dispatch(op, pipeline, bindings, ctx.grid(-(-rows // wg) if row_form else rows))
    # one workgroup per row, or wg rows per workgroup
    follow_actual_size(ctx, out_id, lambda n: -(-n // (width * (wg if row_form else 1))))
    ctx.note_kernel(op, wg_size=wg)


async def build_group_norm(ctx, op):
    x_id, w_id, b_id, n_id, c_id, hw_id, g_id, eps_id, list_id = ctx.args(op, 9)
    x = ctx.float_tensor(x_id, op)
    out_id, mean_id, rstd_id = _outputs(ctx, op, list_id)
    n, c, hw, groups = (int_arg(ctx, v, op) for v in (n_id, c_id, hw_id, g_id))
    if len(x.shape) < 2 or (x.shape[0], x.shape[1]) != (n, c) or n * c * hw != x.numel:
        raise FormatError(f"{op.name}: N={n}, C={c}, HxW={hw} do not describe the input "
                          f"{list(x.shape)}", field=ctx.where(op))
    if groups < 1 or c % groups:
        raise FormatError(f"{op.name}: {c} channels do not split into {groups} groups",
                          field=ctx.where(op))
    if tuple(ctx.float_tensor(out_id, op).shape) != tuple(x.shape):
        raise FormatError(f"{op.name}: output shape {list(ctx.graph.values[out_id].shape)} "
                          f"differs from input {list(x.shape)}", field=ctx.where(op))
    weight = optional_terms(ctx, w_id, op, c, "weight")
    bias = optional_terms(ctx, b_id, op, c, "bias")
    width = c // groups * hw
    if n * groups and not width:
        raise UnsupportedError(f"{op.name}: normalizing empty groups (shape {list(x.shape)})")
    await _normalize(ctx, op, x_id, (weight, bias), (out_id, mean_id, rstd_id), n * groups,
                     width, ctx.float_scalar(eps_id, F32_EPS), groups, hw)


def reference(read, values, args):
    """native_layer_norm: [out, mean, rstd] (its output is a ValueList)."""
    x, k = read(args[0]), len(int_list(values[args[1]]) or [])
    width = math.prod(x.shape[len(x.shape) - k:])
    if not width:
        raise UnsupportedError("native_layer_norm: normalizing over an empty shape")
    has_w, has_b = (not isinstance(values[a], Null) for a in (args[2], args[3]))
    w = read(args[2]).values if has_w else [1.0] * width
    b = read(args[3]).values if has_b else [0.0] * width
    return _rows_reference(x, width, (w, b), number(values[args[4]], F32_EPS),
                           lambda r, j: j)


def _rows_reference(x, width: int, affine, eps: float, channel):
    """[out, means, rstds] over rows of ``width``; element j of row r takes the affine
    terms of ``channel(r, j)``."""
    w, b = affine
    out, means, rstds = [], [], []
    for r, start in enumerate(range(0, len(x.values), width)):
        row = x.values[start:start + width]
        mean = math.fsum(row) / width
        rstd = cpu.rsqrt(math.fsum((v - mean) ** 2 for v in row) / width + eps)
        out += [(v - mean) * rstd * w[channel(r, j)] + b[channel(r, j)]
                for j, v in enumerate(row)]
        means.append(mean)
        rstds.append(rstd)
    return [out, means, rstds]


def group_norm_reference(read, values, args):
    """native_group_norm: [out, mean, rstd] (mean and rstd: (N, groups))."""
    x = read(args[0])
    c, hw, groups = (int(values[a].value) for a in args[4:7])
    width = c // groups * hw
    if not width:
        raise UnsupportedError("native_group_norm: normalizing empty groups")
    has_w, has_b = (not isinstance(values[a], Null) for a in (args[1], args[2]))
    w = read(args[1]).values if has_w else [1.0] * c
    b = read(args[2]).values if has_b else [0.0] * c
    return _rows_reference(x, width, (w, b), number(values[args[7]], F32_EPS),
                           lambda r, j: ((r % groups) * width + j) // hw)


define("aten.native_layer_norm.default", build_layer_norm, reference, 6, half=True)
define("aten.native_group_norm.default", build_group_norm, group_norm_reference, 9,
       half=True)
