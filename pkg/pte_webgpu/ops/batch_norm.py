"""Eval-mode batch norm (shaders/batch_norm.wgsl): ``aten._native_batch_norm_legit_no_training
.default [input, weight|Null, bias|Null, running_mean, running_var, momentum, eps,
out_list]``, what BatchNorm1d/2d/3d in eval mode become where the export does not fold
them into a preceding convolution (ExecuTorch folds a BatchNorm that follows a conv
whose output nothing else reads).

``out_list`` is a ValueList ``[out, save_mean, save_invstd]``; without training the last
two are empty in torch, and only ``out`` is written. Channel ``c`` is dim 1 of an input
of rank >= 2; as torch's CPU kernel, ``invstd = 1 / sqrt(var + eps)``, ``alpha = invstd *
weight``, ``beta = bias - mean * alpha`` and ``out = x * alpha + beta`` in f32. One output
per invocation, four (a vec4) where the spatial size is a multiple of 4.
"""

from __future__ import annotations

import math

from ..errors import FormatError, UnsupportedError
from ..model.graph import ListValue, Null
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from . import cpu_reference as cpu
from .args import number
from .common import elementwise_workgroup
from .exec_ints import follow_actual_size
from .norm import optional_terms
from .registry import define

PARAMS = Uniform(("numel", "u32"), ("channels", "u32"), ("inner", "u32"), ("eps", "f32"))
# x and x4 (y and y4) share a binding: each entry point uses one of them.
KERNEL = Kernel("batch_norm", (Binding(0, "x"), Binding(0, "x4", type="elem4"),
                               Binding(1, "y", "read_write"),
                               Binding(1, "y4", "read_write", "elem4"),
                               Binding(2, "weight"), Binding(3, "bias"), Binding(4, "run_mean"),
                               Binding(5, "run_var")), PARAMS, uniform_binding=6,
                snippets=("flat_index",),
                entries=(Entry("main", "bn_item", "params.numel"),
                         Entry("main4", "bn_item4", "params.numel / 4u")))


def _outputs(ctx, op, vid: int) -> list[int]:
    value = ctx.graph.values[vid]
    if not (isinstance(value, ListValue) and value.kind == "value_list" and value.items):
        raise FormatError(f"{op.name}: the output should be a ValueList [out, save_mean, "
                          f"save_invstd], found {value.kind}", field=ctx.where(op))
    return [int(v) for v in value.items]


async def build(ctx, op):
    x_id, w_id, b_id, mean_id, var_id, _momentum, eps_id, list_id = ctx.args(op, 8)
    x = ctx.float_tensor(x_id, op)
    out_id = _outputs(ctx, op, list_id)[0]
    out = ctx.float_tensor(out_id, op)
    if len(x.shape) < 2:
        raise UnsupportedError(f"{op.name}: input of rank {len(x.shape)}; batch norm needs "
                               "(N, C, ...)")
    if tuple(out.shape) != tuple(x.shape):
        raise FormatError(f"{op.name}: output shape {list(out.shape)} differs from input "
                          f"{list(x.shape)}", field=ctx.where(op))
    channels, inner = x.shape[1], math.prod(x.shape[2:])
    weight = optional_terms(ctx, w_id, op, channels, "weight")
    bias = optional_terms(ctx, b_id, op, channels, "bias")
    for vid, what in ((mean_id, "running_mean"), (var_id, "running_var")):
        optional_terms(ctx, vid, op, channels, what, optional=False)
    if x.numel == 0:
        return
    eps = ctx.float_scalar(eps_id, 1e-5)
    vec = inner % 4 == 0
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg, "has_weight": int(weight is not None),
                                           "has_bias": int(bias is not None)},
                                  "main4" if vec else "main", half=ctx.half(x_id))
    params = ctx.uniform(PARAMS.pack(numel=x.numel, channels=channels, inner=inner, eps=eps),
                         f"{op.name} params")
    # An absent weight or bias binds the running mean (never read: has_weight, has_bias).
    bindings = [(0, x_id), (1, out_id), (2, mean_id if weight is None else weight),
                (3, mean_id if bias is None else bias), (4, mean_id), (5, var_id), (6, params)]
    per = 4 if vec else 1
    ctx.dispatch(op, pipeline, bindings, ctx.grid(-(-x.numel // (wg * per))))
    follow_actual_size(ctx, out_id, wg * per)
    ctx.note_kernel(op, vec4=vec)


def reference(read, values, args):
    x = read(args[0])
    channels, inner = x.shape[1], math.prod(x.shape[2:])
    ones, zeros = [1.0] * channels, [0.0] * channels
    w = ones if isinstance(values[args[1]], Null) else read(args[1]).values
    b = zeros if isinstance(values[args[2]], Null) else read(args[2]).values
    mean, var = read(args[3]).values, read(args[4]).values
    eps = number(values[args[6]], 1e-5)
    alpha = [cpu.rsqrt(var[c] + eps) * w[c] for c in range(channels)]
    beta = [b[c] - mean[c] * alpha[c] for c in range(channels)]
    out = [v * alpha[(i // inner) % channels] + beta[(i // inner) % channels]
           for i, v in enumerate(x.values)]
    return [out] + [[0.0] * values[v].numel for v in values[args[-1]].items[1:]]


def _sizes(op, shape, integer, values):
    return {int(values[op.args[-1]].items[0]): shape(op.args[0])}


define("aten._native_batch_norm_legit_no_training.default", build, reference, 8, half=True,
       sizes=_sizes)
