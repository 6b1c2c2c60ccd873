"""Rotary position embeddings (shaders/rope.wgsl), both for q and k of shape [B, S, H, D]
(H may differ between them: GQA).

``et_vk.apply_rotary_emb.default [xq, xk, freqs_cos, freqs_sin, out: ValueList[xq_out,
xk_out]]``: the llama example's interleaved pairs, ``out[2p] = x[2p] c - x[2p+1] s``,
``out[2p+1] = x[2p] s + x[2p+1] c`` with c, s = row s, column p of the ``[S, D/2]`` tables.

``et_vk.apply_rotary_emb_hf.default [xq, xk, freqs_cos, freqs_sin, start_pos, out]``: the
HF form, ``x * cos + rotate_half(x) * sin`` over the first R dims (R = the tables' width;
the rest pass through), with rows ``start_pos + s`` of the full ``[T, R]`` tables;
``start_pos`` is an Int or a SymInt (read at execute).

``et_vk.apply_rotary_emb_interleaved.default [x, freqs_cis, out]`` (EdgeTAM's complex
RoPE; model code calls the op, no pattern makes it): x ``[..., N, C]`` with (real, imag)
pairs along C, freqs_cis any shape of N * C values, (cos, sin) pairs along its flat [N, C].
"""

from __future__ import annotations

from ..errors import FormatError
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from . import sizes
from .args import ref_int
from .common import elementwise_workgroup
from .exec_ints import follow_actual_size, int_key, slots
from .registry import register


def _ref_rotate(x, cos, sin, row_of, pair):
    _, seq, heads, dim = x.shape
    out = []
    for i, value in enumerate(x.values):
        d, s = i % dim, (i // (dim * heads)) % seq
        out.append(pair(x.values, i, d, row_of(s), cos.values, sin.values))
    return out


def reference(read, values, args):
    """Interleaved pairs: (x[2p] c - x[2p+1] s, x[2p] s + x[2p+1] c), tables [S, D/2]."""
    return _interleaved(read, args, 0)


def reference_rows(read, values, args):
    """The same with rows start + s (args[4]) of the full tables [T, D/2], 0 past them
    (pte_webgpu.sdpa_rope_rows: their slice at start folded away)."""
    return _interleaved(read, args, ref_int(read, values, args[4], default=0))


def _interleaved(read, args, start: int):
    cos, sin = read(args[2]), read(args[3])

    def pair(xs, i, d, row, c, sn):
        dim = xq.shape[3]
        t = row * (dim // 2) + d // 2
        if row >= len(c) // (dim // 2):
            return 0.0
        if d % 2 == 0:
            return xs[i] * c[t] - xs[i + 1] * sn[t]
        return xs[i - 1] * sn[t] + xs[i] * c[t]
    outs = []
    for xid in args[:2]:
        xq = read(xid)
        outs.append(_ref_rotate(xq, cos, sin, lambda s: start + s, pair))
    return outs


def reference_hf(read, values, args):
    """x * cos + rotate_half(x) * sin over the first R dims, rows start_pos + s."""
    cos, sin = read(args[2]), read(args[3])
    start = ref_int(read, values, args[4], default=0)
    rot = cos.shape[-1]
    rows = len(cos.values) // rot

    def pair(xs, i, d, row, c, sn):
        if d >= rot:
            return xs[i]
        if row >= rows:
            return 0.0
        half = rot // 2
        rotated = -xs[i + half] if d < half else xs[i - half]
        return xs[i] * c[row * rot + d] + rotated * sn[row * rot + d]
    return [_ref_rotate(read(xid), cos, sin, lambda s: start + s, pair) for xid in args[:2]]

_BOTH = "max(params.numel_q, params.numel_k)"  # one invocation per element of q and of k
PARAMS = Uniform(("numel_q", "u32"), ("numel_k", "u32"), ("seq", "u32"), ("heads_q", "u32"),
                 ("heads_k", "u32"), ("head_dim", "u32"), ("rot", "u32"),
                 ("table_rows", "u32"), ("start_slot", "u32"))
KERNEL = Kernel("rope", (Binding(0, "xq"), Binding(1, "xk"), Binding(2, "cos_t"),
                         Binding(3, "sin_t"), Binding(4, "out_q", "read_write"),
                         Binding(5, "out_k", "read_write"), Binding(6, "ints", type="i32")),
                PARAMS, entries=(Entry("interleaved", "interleaved_item", _BOTH),
                                 Entry("interleaved_rows", "interleaved_rows_item", _BOTH),
                                 Entry("hf", "hf_item", _BOTH),
                                 Entry("complex", "complex_item", "params.numel_q")))


def _outputs(ctx, op, out_id: int) -> tuple[int, int]:
    outs = ctx.graph.values[out_id]
    if getattr(outs, "kind", "") != "value_list" or len(outs.items) != 2:
        raise FormatError(f"{op.name}: the output should be a ValueList of 2 tensors",
                          field=ctx.where(op))
    return outs.items


def _check_x(ctx, op, x_id: int, out_id: int):
    x = ctx.float_tensor(x_id, op)
    ctx.float_tensor(out_id, op)
    if len(x.shape) != 4:
        raise FormatError(f"{op.name}: {list(x.shape)} should be [B, S, H, D]",
                          field=ctx.where(op))
    if tuple(ctx.graph.values[out_id].shape) != tuple(x.shape):
        raise FormatError(f"{op.name}: output {list(ctx.graph.values[out_id].shape)} should be "
                          f"{list(x.shape)}", field=ctx.where(op))
    return x


async def rotate(ctx, op, entry, ids, cos_id, sin_id, rot, rows, ints, start_slot,
                 half: bool, follow: int, above: int = 0) -> None:
    """One dispatch rotating q and k: ``ids`` = (xq, xk, q_out, k_out), the outputs values
    or buffers. Its grid follows the actual size of value ``follow`` (q's element count)
    and it runs only when that is above ``above`` (sdpa_rope's many-row executes)."""
    xq_id, xk_id, q_out, k_out = ids
    xq, xk = ctx.tensor(xq_id, op), ctx.tensor(xk_id, op)
    most = max(xq.numel, xk.numel)
    if most == 0:
        return
    _, seq, _, dim = xq.shape
    wg = min(64, elementwise_workgroup(ctx))
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, entry, half=half)
    params = ctx.uniform(PARAMS.pack(numel_q=xq.numel, numel_k=xk.numel, seq=seq,
                                     heads_q=xq.shape[2], heads_k=xk.shape[2], head_dim=dim,
                                     rot=rot, table_rows=rows, start_slot=start_slot),
                         f"{op.name} params")
    binds = [(0, xq_id), (1, xk_id), (2, cos_id), (3, sin_id), (4, q_out), (5, k_out),
             (7, params)]
    if entry != "interleaved":  # the entries that read a start position
        binds.append((6, ints))
    ctx.dispatch(op, pipeline, binds, ctx.grid(-(-most // wg)))
    # q and k share B and S: k's actual elements are q's scaled by their head counts
    follow_actual_size(ctx, follow, lambda e: -(-max(e, e * xk.numel // xq.numel) // wg)
                       if e > above else 0)


@register("et_vk.apply_rotary_emb.default", half=True, reference=reference, args=5,
          sizes=sizes.rotary)
async def build_rotary(ctx, op):
    xq_id, xk_id, cos_id, sin_id, out_id = ctx.args(op, 5)
    q_out, k_out = _outputs(ctx, op, out_id)
    xq, xk = _check_x(ctx, op, xq_id, q_out), _check_x(ctx, op, xk_id, k_out)
    cos, sin = ctx.float_tensor(cos_id, op), ctx.float_tensor(sin_id, op)
    dim, seq = xq.shape[3], xq.shape[1]
    if dim % 2 or xk.shape[3] != dim or xk.shape[1] != seq:
        raise FormatError(f"{op.name}: xq {list(xq.shape)} and xk {list(xk.shape)} need one "
                          "even head dim and one S", field=ctx.where(op))
    if cos.numel != seq * dim // 2 or sin.numel != cos.numel:
        raise FormatError(f"{op.name}: tables {list(cos.shape)} / {list(sin.shape)} should hold "
                          f"[{seq}, {dim // 2}]", field=ctx.where(op))
    await rotate(ctx, op, "interleaved", (xq_id, xk_id, q_out, k_out), cos_id, sin_id, dim,
                 seq, None, 0, ctx.half(q_out), q_out)


@register("et_vk.apply_rotary_emb_hf.default", half=True, reference=reference_hf, args=6,
          sizes=sizes.rotary)
async def build_rotary_hf(ctx, op):
    xq_id, xk_id, cos_id, sin_id, start_id, out_id = ctx.args(op, 6)
    q_out, k_out = _outputs(ctx, op, out_id)
    xq, xk = _check_x(ctx, op, xq_id, q_out), _check_x(ctx, op, xk_id, k_out)
    cos, sin = ctx.float_tensor(cos_id, op), ctx.float_tensor(sin_id, op)
    if len(cos.shape) < 1 or tuple(sin.shape) != tuple(cos.shape):
        raise FormatError(f"{op.name}: tables {list(cos.shape)} / {list(sin.shape)} differ",
                          field=ctx.where(op))
    rot = cos.shape[-1]
    rows = cos.numel // rot if rot else 0
    if rot % 2 or rot > min(xq.shape[3], xk.shape[3]):
        raise FormatError(f"{op.name}: table width {rot} must be even and at most the head "
                          f"dim", field=ctx.where(op))
    ints, (start_slot,) = slots(ctx, op, [int_key(ctx, op, start_id, default=0)])
    await rotate(ctx, op, "hf", (xq_id, xk_id, q_out, k_out), cos_id, sin_id, rot, rows, ints,
                 start_slot, ctx.half(q_out), q_out)


def reference_complex(read, values, args):
    x, f = read(args[0]), read(args[1])
    c = x.shape[-1]
    n = x.shape[-2]
    out = []
    for i, v in enumerate(x.values):
        d = i % c
        pair = ((i // c) % n) * c + d - d % 2
        cos, sin = f.values[pair], f.values[pair + 1]
        out.append(v * cos - x.values[i + 1] * sin if d % 2 == 0
                   else x.values[i - 1] * sin + v * cos)
    return out


@register("et_vk.apply_rotary_emb_interleaved.default", half=True, reference=reference_complex,
          args=3, sizes=sizes.same_as_first)
async def build_rotary_complex(ctx, op):
    x_id, f_id, out_id = ctx.args(op, 3)
    x, f = ctx.float_tensor(x_id, op), ctx.float_tensor(f_id, op)
    out = ctx.float_tensor(out_id, op)
    if len(x.shape) < 2 or x.shape[-1] % 2 or tuple(out.shape) != tuple(x.shape):
        raise FormatError(f"{op.name}: x {list(x.shape)} should be [..., N, C] with C even, "
                          f"out {list(out.shape)} the same", field=ctx.where(op))
    n, c = x.shape[-2], x.shape[-1]
    if f.numel != n * c:
        raise FormatError(f"{op.name}: freqs_cis {list(f.shape)} should hold [{n}, {c}]",
                          field=ctx.where(op))
    if x.numel == 0:
        return
    wg = min(64, elementwise_workgroup(ctx))
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, "complex", half=ctx.half(out_id))
    params = ctx.uniform(PARAMS.pack(numel_q=x.numel, seq=n, head_dim=c), f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, x_id), (2, f_id), (4, out_id), (7, params)],
                 ctx.grid(-(-x.numel // wg)))
    follow_actual_size(ctx, out_id, wg)
