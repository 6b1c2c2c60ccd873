"""``quantized_decomposed.embedding_byte`` (``.dtype`` and ``.default``): the row gather
of an 8-bit embedding table, run as a plan kernel (the llama export's ``-E 8,G`` leaves
it outside the Vulkan delegate: ``quantized_decomposed::embedding_byte.dtype_out``).

    embedding_byte.dtype(weight, scales, zero_points, qmin, qmax, indices, dtype, out)

weight int8 (or uint8) [V, D]; scales float [V] (one per row, ``-E 8,0``) or [V, G]
(groups of D / G columns); zero_points None or float like the scales; out float32
indices.shape + [D]: (weight - zp) * scale, as torch's dequantize_per_channel_group
(executorch/exir/passes/_quant_patterns_and_replacements.py). An id outside [0, V)
raises at execute, as aten.embedding does (runtime/id_checks.py).
"""

from __future__ import annotations

from ..errors import FormatError, InputError, UnsupportedError
from ..model.f32 import to_f32
from ..model.graph import Null
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from .common import elementwise_workgroup
from .exec_ints import follow_actual_size
from .quantize_tensor import check_float_constant, int_arg, quant_tensor
from .registry import register

PARAMS = Uniform(("numel", "u32"), ("dim", "u32"), ("vocab", "u32"), ("groups", "u32"),
                 ("group", "u32"), ("signed", "u32"), ("has_zp", "u32"))
KERNEL = Kernel("embedding_byte", (Binding(0, "w", type="u32"), Binding(1, "scales", type="f32"),
                                   Binding(2, "zp", type="f32"),
                                   Binding(3, "indices", type="i32"),
                                   Binding(4, "out", "read_write", "f32"),
                                   Binding(6, "flag", "read_write", "atomic<u32>")), PARAMS,
                uniform_binding=5, half=False, snippets=("bad_id",),
                entries=(Entry("main", "item", "params.numel"),))


def _groups(shape_w, shape_s, what, error=FormatError, field=None):
    """Groups per row G from scales [V] or [V, G] (G dividing D)."""
    vocab, dim = shape_w
    if len(shape_s) == 1 and shape_s[0] == vocab:
        return 1
    if len(shape_s) == 2 and shape_s[0] == vocab and shape_s[1] and dim % shape_s[1] == 0:
        return shape_s[1]
    raise error(f"{what}: scales {list(shape_s)} fit no grouping of weight {list(shape_w)} "
                "(expected [V] or [V, G] with G dividing D)", field=field)


def out_sizes(op, shape, integer, values):
    """The output follows the indices (argument 5), as aten.embedding's (ops/sizes.py)."""
    return {op.args[-1]: tuple(shape(op.args[5])) + (values[op.args[0]].shape[-1],)}


def reference(read, values, args):
    weight, scales, indices = read(args[0]), read(args[1]), read(args[5])
    if len(weight.shape) != 2:
        raise FormatError(f"embedding_byte: weight {list(weight.shape)} should be [V, D]")
    vocab, dim = weight.shape
    groups = _groups(weight.shape, scales.shape, "embedding_byte")
    zp = None if isinstance(values[args[2]], Null) else read(args[2]).values
    out = []
    for pos, i in enumerate(indices.values):
        i = int(i)
        if not 0 <= i < vocab:
            raise InputError(f"embedding_byte: id {i} at position {pos} is outside [0, {vocab})")
        for c in range(dim):
            g = i * groups + c // (dim // groups)
            q = float(weight.values[i * dim + c]) - (zp[g] if zp is not None else 0.0)
            out.append(to_f32(to_f32(q) * scales.values[g]))
    return out


@register("quantized_decomposed.embedding_byte.dtype", "quantized_decomposed.embedding_byte.default",
          reference=reference, sizes=out_sizes)
async def build(ctx, op):
    if len(op.args) not in (7, 8):
        raise FormatError(f"{op.name} takes 8 arguments, found {len(op.args)}",
                          field=ctx.where(op))
    w_id, s_id, zp_id, qmin_id, qmax_id, idx_id = op.args[:6]
    out_id = op.args[-1]
    weight = quant_tensor(ctx, w_id, op, "weight")
    scales = ctx.float_tensor(s_id, op)
    indices = ctx.int_tensor(idx_id, op)
    out = ctx.float_tensor(out_id, op)
    if len(weight.shape) != 2:
        raise FormatError(f"{op.name}: weight {list(weight.shape)} should be [V, D]",
                          field=ctx.where(op))
    vocab, dim = weight.shape
    groups = _groups(weight.shape, scales.shape, op.name, field=ctx.where(op))
    check_float_constant(ctx, s_id, op, "scales", vocab * groups)
    has_zp = not isinstance(ctx.graph.values[zp_id], Null)
    if has_zp:
        zp = ctx.float_tensor(zp_id, op)
        if tuple(zp.shape) != tuple(scales.shape):
            raise FormatError(f"{op.name}: zero points {list(zp.shape)} should have the scales' "
                              f"shape {list(scales.shape)}", field=ctx.where(op))
    if any(ctx.half(v) for v in (s_id, out_id) + ((zp_id,) if has_zp else ())):
        raise UnsupportedError(f"{op.name}: float16 scales or output held as f16 are not "
                               f"supported ({ctx.where(op)})")
    lo, hi = (-128, 127) if weight.dtype.name == "int8" else (0, 255)
    qmin = int_arg(ctx, qmin_id, op, "quant_min", lo, hi)
    int_arg(ctx, qmax_id, op, "quant_max", qmin, hi)
    if tuple(out.shape) != tuple(indices.shape) + (dim,):
        raise FormatError(f"{op.name}: output {list(out.shape)} should be the indices' shape "
                          f"{list(indices.shape)} plus [{dim}]", field=ctx.where(op))
    if out.numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg})
    uniform = ctx.uniform(PARAMS.pack(numel=out.numel, dim=dim, vocab=vocab, groups=groups,
                                      group=dim // groups,
                                      signed=int(weight.dtype.name == "int8"),
                                      has_zp=int(has_zp)), f"{op.name} params")
    flag = ctx.id_check(idx_id, vocab, op)
    ctx.dispatch(op, pipeline, [(0, w_id), (1, s_id), (2, zp_id if has_zp else s_id),
                                (3, idx_id), (4, out_id), (5, uniform), (6, flag)],
                 ctx.grid(-(-out.numel // wg)))
    follow_actual_size(ctx, out_id, wg)

