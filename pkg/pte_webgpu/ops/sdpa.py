"""``et_vk.sdpa.default [q, k, v, attn_mask | Null, scale: Double | Null, out]``
(shaders/sdpa.wgsl): non-causal attention ``softmax(q k^T * scale + attn_mask) v`` as
ExecuTorch's Vulkan custom op defines it (model code calls torch.ops.et_vk.sdpa; no
pattern makes it). q ``[..., S, D]``, k ``[..., L, D]``, v ``[..., L, Dv]`` with one batch
shape, the additive float mask broadcast over ``[..., S, L]``; scale Null: 1 / sqrt(D).
One invocation per output element, f32 math (the f16 form stores f16).
"""

from __future__ import annotations

import math
from math import prod

from ..errors import FormatError, UnsupportedError
from ..model.graph import Null
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from . import cpu_reference as cpu
from .args import number
from .common import MAX_RANK, elementwise_workgroup
from .copying import broadcast_strides
from .registry import define

PARAMS = Uniform(("numel", "u32"), ("s", "u32"), ("l", "u32"), ("d", "u32"), ("dv", "u32"),
                 ("batch_rank", "u32"), ("scale", "f32"), ("has_mask", "u32"),
                 ("mask_s", "u32"), ("mask_l", "u32"), ("batch_shape", "vec8"),
                 ("mask_batch", "vec8"))
KERNEL = Kernel("sdpa", (Binding(0, "q"), Binding(1, "k"), Binding(2, "v"), Binding(3, "mask"),
                         Binding(4, "out", "read_write")), PARAMS, uniform_binding=5,
                snippets=("bits", "nan_minmax", "shape_index", "box_offset", "softmax_weighted"),
                entries=(Entry("main", "sdpa_item", "params.numel"),))


def layout(q_shape, k_shape, v_shape, out_shape, mask_shape, name: str):
    """(batch shape, S, L, D, Dv, mask strides over [..batch, S, L] or None)."""
    if len(q_shape) < 2 or len(k_shape) != len(q_shape) or len(v_shape) != len(q_shape):
        raise FormatError(f"{name}: q {list(q_shape)}, k {list(k_shape)}, v {list(v_shape)} "
                          "should be [..., S, D], [..., L, D], [..., L, Dv]")
    batch, (s, d), (n_kv, dk), (lv, dv) = q_shape[:-2], q_shape[-2:], k_shape[-2:], v_shape[-2:]
    if k_shape[:-2] != batch or v_shape[:-2] != batch or dk != d or lv != n_kv:
        raise FormatError(f"{name}: q {list(q_shape)}, k {list(k_shape)}, v {list(v_shape)} "
                          "do not share a batch shape, D and L")
    if tuple(out_shape) != tuple(batch) + (s, dv):
        raise FormatError(f"{name}: output {list(out_shape)}, expected "
                          f"{list(batch) + [s, dv]}")
    mask = None if mask_shape is None else \
        broadcast_strides(mask_shape, tuple(batch) + (s, n_kv), name)
    return tuple(batch), s, n_kv, d, dv, mask


def _scale(value, d: int) -> float:
    return number(value, 1.0 / math.sqrt(d))  # Null: 1 / sqrt(D)


async def build(ctx, op):
    q_id, k_id, v_id, mask_id, scale_id, out_id = ctx.args(op, 6)
    q, k, v, out = (ctx.float_tensor(i, op) for i in (q_id, k_id, v_id, out_id))
    has_mask = not isinstance(ctx.graph.values[mask_id], Null)
    mask_shape = ctx.float_tensor(mask_id, op).shape if has_mask else None
    try:
        batch, s, n_kv, d, dv, mstrides = layout(q.shape, k.shape, v.shape, out.shape, mask_shape,
                                              op.name)
    except FormatError as e:
        raise FormatError(str(e), field=ctx.where(op)) from None
    if len(batch) > MAX_RANK:
        raise UnsupportedError(f"{op.name}: {len(batch)} batch dims exceed {MAX_RANK}")
    if out.numel == 0:
        return
    if n_kv == 0:
        raise UnsupportedError(f"{op.name}: attention over no keys ({ctx.where(op)})")
    scale = ctx.float_scalar(scale_id, 1.0 / math.sqrt(d))  # Null: the default
    mstrides = mstrides or [0] * (len(batch) + 2)
    params = PARAMS.pack(numel=out.numel, s=s, l=n_kv, d=d, dv=dv, batch_rank=len(batch),
                         scale=scale, has_mask=int(has_mask), mask_s=mstrides[-2],
                         mask_l=mstrides[-1], batch_shape=list(batch),
                         mask_batch=mstrides[:-2])
    wg = min(64, elementwise_workgroup(ctx))
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, half=ctx.half(out_id))
    ctx.dispatch(op, pipeline, [(0, q_id), (1, k_id), (2, v_id),
                                (3, mask_id if has_mask else q_id), (4, out_id),
                                (5, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-out.numel // wg)))


def reference(read, values, args):
    q, k, v = (read(a) for a in args[:3])
    has_mask = not isinstance(values[args[3]], Null)
    mask = read(args[3]) if has_mask else None
    batch, s, n_kv, d, dv, mstrides = layout(q.shape, k.shape, v.shape, values[args[5]].shape,
                                          mask.shape if mask else None, "et_vk.sdpa")
    scale = cpu.to_f32(_scale(values[args[4]], d))
    moffs = cpu.strided_index(tuple(batch) + (s, n_kv), mstrides) if mask else None
    out = []
    for b in range(prod(batch)):
        for i in range(s):
            qr = q.values[(b * s + i) * d:(b * s + i + 1) * d]
            scores = []
            for j in range(n_kv):
                kr = k.values[(b * n_kv + j) * d:(b * n_kv + j + 1) * d]
                x = cpu.to_f32(math.fsum(a * c for a, c in zip(qr, kr))) * scale
                if mask:
                    x += mask.values[moffs[(b * s + i) * n_kv + j]]
                scores.append(x)
            top = max(scores) if not any(x != x for x in scores) else math.nan
            weights = [cpu.exp(x - top) for x in scores]
            total = sum(weights)
            for e in range(dv):
                acc = sum(w * v.values[(b * n_kv + j) * dv + e] for j, w in enumerate(weights))
                out.append(acc / total if total else math.nan)
    return out


define("et_vk.sdpa.default", build, reference, 6, half=True)
