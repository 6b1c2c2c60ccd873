"""Weights dequantized inside the delegate before a float linear, as two 8-bit export
paths leave them (docs/quantized-formats.md):

    torchao.dequantize_affine(q, block_size, scale, zero_point, input_dtype, qmin, qmax,
                              output_dtype, out)                 (IntxWeightOnlyConfig int8)
    quantized_decomposed.dequantize_per_channel(q, scales, zero_points, axis, qmin, qmax,
                                                dtype, out_dtype, out)  (VulkanQuantizer dynamic)

q int8/uint8 [R, C]; one scale (and zero point) per block of block_size: out =
(f32(q) - f32(zp)) * scale, as torchao's _dequantize_affine_no_dtype_check and torch's
dequantize_per_channel compute it (both exact but for the one f32 rounding of the
product). Two-dimensional tensors only (what the linears' weights are).
"""

from __future__ import annotations

from ..errors import FormatError, UnsupportedError
from ..model.f32 import to_f32
from ..model.graph import ListValue, Null, Scalar
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from .common import elementwise_workgroup
from .quantize_tensor import check_float_constant, quant_tensor
from .registry import define

PARAMS = Uniform(("numel", "u32"), ("cols", "u32"), ("block_r", "u32"), ("block_c", "u32"),
                 ("signed", "u32"), ("zp_kind", "u32"))
KERNEL = Kernel("dequantize_weight", (Binding(0, "q_words", type="u32"),
                                      Binding(1, "scales", type="f32"),
                                      Binding(2, "zp", type="u32"),
                                      Binding(3, "out", "read_write")), PARAMS, half=False,
                entries=(Entry("main", "item", "params.numel"),))
ZP_KINDS = {"int32": 1, "int64": 1, "int8": 2, "uint8": 3, "float32": 4}


def _blocks(op_name, shape, block, scale_numel, field=None):
    """(block_r, block_c) checked against [R, C] and the scales' element count."""
    rows, cols = shape
    if len(block) != 2 or min(block) < 1 or rows % block[0] or cols % block[1]:
        raise FormatError(f"{op_name}: block size {list(block)} does not tile {list(shape)}",
                          field=field)
    need = (rows // block[0]) * (cols // block[1])
    if scale_numel < need:
        raise FormatError(f"{op_name}: {scale_numel} scales for {need} blocks of "
                          f"{list(block)} in {list(shape)}", field=field)
    return block[0], block[1]


def _layout(values, op_name, args, q_shape):
    """(block, scales vid, zero points vid | None) of either op."""
    if op_name.startswith("torchao."):
        bs = values[args[1]]
        if not (isinstance(bs, ListValue) and bs.kind == "int_list"):
            raise FormatError(f"{op_name}: block_size (value {args[1]}) should be an IntList")
        return [int(v) for v in bs.items], args[2], args[3]
    axis = values[args[3]]
    if not (isinstance(axis, Scalar) and axis.kind == "int") or int(axis.value) not in (0, 1, -1, -2):
        raise FormatError(f"{op_name}: axis (value {args[3]}) should be 0 or 1 of a 2-d tensor")
    axis = int(axis.value) % 2
    return ([1, q_shape[1]] if axis == 0 else [q_shape[0], 1]), args[1], args[2]


async def build(ctx, op):
    args = ctx.args(op, 9)
    q = quant_tensor(ctx, args[0], op, "input")
    out = ctx.float_tensor(args[-1], op)
    if len(q.shape) != 2 or tuple(out.shape) != tuple(q.shape) or ctx.half(args[-1]):
        raise UnsupportedError(f"{op.name}: input {q.dtype.name}{list(q.shape)} -> output "
                               f"{out.dtype.name}{list(out.shape)}: expected 2-d, the same "
                               f"shape, float32 out ({ctx.where(op)})")
    block, s_id, zp_id = _layout(ctx.graph.values, op.name, args, q.shape)
    scales = ctx.tensor(s_id, op)
    block_r, block_c = _blocks(op.name, q.shape, block, scales.numel, ctx.where(op))
    blocks = (q.shape[0] // block_r) * (q.shape[1] // block_c)
    check_float_constant(ctx, s_id, op, "scales", blocks)
    zp_kind = 0
    if not isinstance(ctx.graph.values[zp_id], Null):
        zp = ctx.tensor(zp_id, op)
        zp_kind = ZP_KINDS.get(zp.dtype.name if zp.dtype else "", 0)
        if not zp_kind or zp.numel < blocks:
            raise FormatError(f"{op.name}: zero points {zp.dtype.name if zp.dtype else '?'}"
                              f"{list(zp.shape)} (value {zp_id}) should hold {blocks} integers "
                              "or floats", field=ctx.where(op))
    if out.numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg})
    params = ctx.uniform(PARAMS.pack(numel=out.numel, cols=q.shape[1], block_r=block_r,
                                     block_c=block_c, signed=int(q.dtype.name == "int8"),
                                     zp_kind=zp_kind), f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, args[0]), (1, s_id), (2, zp_id if zp_kind else s_id),
                                (3, args[-1]), (4, params)], ctx.grid(-(-out.numel // wg)))


def reference(read, values, args, name):
    q = read(args[0])
    block, s_id, zp_id = _layout(values, name, args, q.shape)
    scales = read(s_id).values
    block_r, block_c = _blocks(name, q.shape, block, len(scales))
    zp = None if isinstance(values[zp_id], Null) else read(zp_id).values
    rows, cols = q.shape
    out = []
    for r in range(rows):
        for c in range(cols):
            b = (r // block_r) * (cols // block_c) + c // block_c
            v = float(q.values[r * cols + c]) - (float(zp[b]) if zp is not None else 0.0)
            out.append(to_f32(to_f32(v) * scales[b]))
    return out


for _name in ("torchao.dequantize_affine.default",
              "quantized_decomposed.dequantize_per_channel.default"):
    define(_name, build, lambda read, values, args, _n=_name: reference(read, values, args, _n),
           9)
