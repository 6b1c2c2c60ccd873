"""``sdpa_with_kv_cache.default [q, k, v, k_cache, v_cache, start_pos, seq_len, attn_mask,
dropout_p, is_causal, scale, out]`` (shaders/sdpa_kv_cache.wgsl), the llama example's
fused attention: writes k and v into the caches at rows ``[start_pos, start_pos + S)``,
then each query row s attends causally to cache rows ``[0, start_pos + s]``; query head
h reads KV head ``h // (H // Hkv)`` (GQA). q/out ``[1, S, H, D]``, k/v ``[1, S, Hkv, D]``,
caches ``[1, T, Hkv, D]``. ``seq_len`` is serialized as 1 even for a prefill, so S is
q's actual size (execute time). The caches are state (runtime/state.py).

One dispatch writes the new rows into the caches and attends (rows from start on are read
from k and v). Kernels (``variants={"sdpa": NAME}`` or ``PTE_WEBGPU_SDPA``): ``rows``, one
workgroup per query row and head, each score computed once (the default on CPU adapters
where a workgroup holds head_dim lanes); ``elements``, one invocation per output element,
which recomputes its row's scores (no workgroup memory or barriers; D times the work);
``split`` (on GPUs where no tile plan fits), as ``rows`` except that an execute of one query row (a
decode step) cuts the visible cache rows into ``parts`` spans, a workgroup each, and a
second dispatch merges their partial softmaxes (flash-decoding): one row's 9 heads would
otherwise keep 9 workgroups busy over the whole context; ``tiles``, as ``split`` except
that executes of many query rows (a prefill) take a workgroup per tile of query rows,
part of its keys and head, which loads each K/V row once per tile into workgroup memory
(flash attention, ops/attention_tiles.py) where ``rows`` loads it once per query row: the
default on GPUs.

``update_cache.default [value, cache, start_pos: SymInt | Int, out]`` (llama's custom
update_cache where no custom_sdpa joins it into sdpa_with_kv_cache): value ``[1, S, H, D]``
into cache ``[1, T, H, D]`` rows ``[start_pos, start_pos + S)`` (the cache is state); out
is a placeholder the op leaves as it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from math import prod

from ..errors import FormatError, InputError, UnsupportedError
from ..model.graph import Null, Scalar
from ..shaders.compose import Binding, Kernel, Uniform
from . import attention_tiles
from . import cpu_reference as cpu
from . import sizes
from .args import number, ref_int
from .attention_merge import MergedInput, can_merge
from .common import elementwise_workgroup, pow2_lanes
from .exec_ints import follow_actual_size, int_key, int_value, size_key, slots
from .registry import register
from .rope import reference as rope_reference
from .rope import reference_hf as rope_reference_hf
from .rope import reference_rows as rope_reference_rows
from .rope import rotate
from .variants import declare

PARAMS = Uniform(("heads", "u32"), ("kv_heads", "u32"), ("head_dim", "u32"),
                 ("cache_rows", "u32"), ("s_bound", "u32"), ("start_slot", "u32"),
                 ("len_slot", "u32"), ("scale", "f32"), ("parts", "u32"),
                 # the HF RoPE folded in (SDPA_ROPE_HF): table width, rows, start's slot
                 ("rope_rot", "u32"), ("rope_rows", "u32"), ("rope_slot", "u32"))
_BINDINGS = (
    Binding(0, "q"), Binding(1, "k"), Binding(2, "v"), Binding(3, "k_cache", "read_write"),
    Binding(4, "v_cache", "read_write"), Binding(5, "out", "read_write"),
    Binding(6, "ints", type="i32"), Binding(8, "parts", "read_write", type="f32"))
_SNIPPETS = ("flat_index", "bits", "nan_minmax", "tree", "softmax_weighted")
# how the kernels read q and k: as stored, or turned by RoPE (SDPA_ROPE)
_LOADS = """fn q_load(i: u32) -> f32 {
  return f32(q[i]);
}

fn k_load(i: u32) -> f32 {
  return f32(k[i]);
}
"""
# q or k (which = 0 or 1) as stored, for the turned loads below
_QK = """fn qk(which: u32, i: u32) -> f32 {
  if (which == 0u) {
    return f32(q[i]);
  }
  return f32(k[i]);
}

fn q_load(i: u32) -> f32 {
  return turned(0u, i, params.heads);
}

fn k_load(i: u32) -> f32 {
  return turned(1u, i, params.kv_heads);
}
"""
# et_vk.apply_rotary_emb's interleaved pairs (shaders/rope.wgsl `interleaved`): element i
# of q [S, H, D] or k [S, Hkv, D] with its pair, turned by row s, column d / 2 of the
# tables [S, D/2], rounded to the stored type as the rope op stored it (D is even);
# rope_row0(): the table row of query row 0 (`interleaved_rows`: start, the tables whole,
# 0 past them)
_ROPE_INTERLEAVED = _QK + """
fn turned(which: u32, i: u32, heads: u32) -> f32 {
  let D = params.head_dim;
  let row = rope_row0() + i / (D * heads);
  if (row >= params.rope_rows) {
    return 0.0;
  }
  let t = row * (D / 2u) + (i % D) / 2u;
  let c = f32(cos_t[t]);
  let sn = f32(sin_t[t]);
  if (i % 2u == 0u) {
    return f32(elem(qk(which, i) * c - qk(which, i + 1u) * sn));
  }
  return f32(elem(qk(which, i - 1u) * sn + qk(which, i) * c));
}
"""
_ROPE_LOADS = _ROPE_INTERLEAVED + """
fn rope_row0() -> u32 {
  return 0u;
}
"""
_ROPE_ROWS_LOADS = _ROPE_INTERLEAVED + """
fn rope_row0() -> u32 {
  return u32(max(ints[params.rope_slot], 0));
}
"""
# et_vk.apply_rotary_emb_hf (shaders/rope.wgsl `hf`): the first rope_rot dims turned half
# against half by row start + s of the full tables [rope_rows, rope_rot] (0 past them),
# the rest as they are
_ROPE_HF_LOADS = _QK + """
fn turned(which: u32, i: u32, heads: u32) -> f32 {
  let D = params.head_dim;
  let d = i % D;
  if (d >= params.rope_rot) {
    return qk(which, i);
  }
  let row = u32(max(ints[params.rope_slot], 0)) + i / (D * heads);
  if (row >= params.rope_rows) {
    return 0.0;
  }
  let half_rot = params.rope_rot / 2u;
  var rotated = 0.0;
  if (d < half_rot) {
    rotated = -qk(which, i + half_rot);
  } else {
    rotated = qk(which, i - half_rot);
  }
  let t = row * params.rope_rot + d;
  return f32(elem(qk(which, i) * f32(cos_t[t]) + rotated * f32(sin_t[t])));
}
"""
KERNEL = Kernel("sdpa_kv_cache", _BINDINGS, PARAMS, uniform_binding=7, snippets=_SNIPPETS,
                generated=_LOADS)
_TABLES = (Binding(9, "cos_t"), Binding(10, "sin_t"))
ROPE_KERNEL = Kernel("sdpa_kv_cache", _BINDINGS + _TABLES, PARAMS, uniform_binding=7,
                     snippets=_SNIPPETS, generated=_ROPE_LOADS, name="sdpa_kv_cache_rope")
ROPE_ROWS_KERNEL = Kernel("sdpa_kv_cache", _BINDINGS + _TABLES, PARAMS, uniform_binding=7,
                          snippets=_SNIPPETS, generated=_ROPE_ROWS_LOADS,
                          name="sdpa_kv_cache_rope_rows")
ROPE_HF_KERNEL = Kernel("sdpa_kv_cache", _BINDINGS + _TABLES, PARAMS, uniform_binding=7,
                        snippets=_SNIPPETS, generated=_ROPE_HF_LOADS,
                        name="sdpa_kv_cache_rope_hf")
SDPA_ROPE = "pte_webgpu.sdpa_rope"
SDPA_ROPE_HF = "pte_webgpu.sdpa_rope_hf"
SDPA_ROPE_ROWS = "pte_webgpu.sdpa_rope_rows"
Q_HELD = 256  # head_dim at most, for the rows and split forms (shaders/sdpa_kv_cache.wgsl)


def _choose(traits, dim: int) -> str:
    """A workgroup per query row and head where one holds head_dim lanes: on CPU
    adapters ``rows``; on GPUs ``tiles`` (decode: split's pair; a prefill of 1020 tokens
    on an H100: attention 27.3 -> 10.3 ms, 22.4k -> 39.6k tok/s, sessions 26-27) where
    a tile plan fits the head dim, else ``split``; else ``elements``."""
    if pow2_lanes(traits, dim) < dim or dim > Q_HELD:
        return "elements"
    if traits.is_cpu:
        return "rows"
    return "split" if _supported("tiles", traits, dim) else "tiles"


def _supported(form: str, traits, dim: int) -> str | None:
    lanes = pow2_lanes(traits, dim)
    if form in ("rows", "split", "tiles") and lanes < dim:
        return f"needs {dim} lanes per workgroup (the head dim); this adapter gives {lanes}"
    if form in ("rows", "split", "tiles") and dim > Q_HELD:
        return f"holds a query row of at most {Q_HELD} elements (head dim {dim})"
    if form == "tiles" and pow2_lanes(traits, attention_tiles.LANES) < attention_tiles.LANES:
        return f"needs workgroups of {attention_tiles.LANES} lanes"
    if form == "tiles":
        return attention_tiles.why_not(dim, traits.workgroup_storage)
    return None


VARIANTS = declare("sdpa", ("rows", "elements", "split", "tiles"),
                   doc="rows: a workgroup per query row and head; elements: an invocation "
                   "per output element; split: rows, and a decode step's cache rows split "
                   "across workgroups, then combined; tiles: split, with a prefill's query "
                   "rows in tiles sharing K/V tiles in workgroup memory (flash attention)",
                   choose=_choose, supported=_supported)
SPAN_ROWS = 32  # cache rows per split part at full context: parts = cache_rows / SPAN_ROWS
MAX_PARTS = 32  # combine holds 64 parts in workgroup memory (shaders/sdpa_kv_cache.wgsl)


def reference(read, values, args, write=None):
    """q [1,S,H,D], k/v [1,S,Hkv,D] written into the caches [1,T,Hkv,D] at start_pos, then
    causal softmax(q k^T * scale) v over cache rows [0, start_pos + s]. ``write(vid,
    values)``, when given, keeps the updated caches (the runner's state)."""
    q, k, v, kc, vc = (read(a) for a in args[:5])
    start = ref_int(read, values, args[5])
    _, seq, heads, dim = q.shape
    rows, kv_heads = kc.shape[1], kc.shape[2]
    scale = number(values[args[10]], 1.0 / math.sqrt(dim))
    k_cache, v_cache = list(kc.values), list(vc.values)
    row_len = kv_heads * dim
    for s in range(seq):
        if start + s < rows:
            at = (start + s) * row_len
            k_cache[at:at + row_len] = k.values[s * row_len:(s + 1) * row_len]
            v_cache[at:at + row_len] = v.values[s * row_len:(s + 1) * row_len]
    if write is not None:
        write(args[3], k_cache)
        write(args[4], v_cache)
    out = []
    for s in range(seq):
        visible = min(start + s + 1, rows)
        for h in range(heads):
            kvh = h // (heads // kv_heads)
            qrow = q.values[(s * heads + h) * dim:(s * heads + h + 1) * dim]
            scores = [math.fsum(a * b for a, b in zip(qrow, k_cache[j * row_len + kvh * dim:
                                                                      j * row_len + kvh * dim + dim]))
                      * scale for j in range(visible)]
            top = max(scores)
            weights = [math.exp(x - top) for x in scores]
            total = math.fsum(weights)
            out += [math.fsum(w * v_cache[j * row_len + kvh * dim + e]
                              for j, w in enumerate(weights)) / total for e in range(dim)]
    return out


def _check_positions(ctx, op, start_id: int, q_id: int, rows: int) -> None:
    """At execute: rows [start, start + S) must lie in the cache (torch would fail too)."""

    values, graph, where, bound = ctx.graph.values, ctx.graph_key, ctx.where(op), \
        ctx.graph.values[q_id].shape

    def check(env):
        start = int_value(env, values, graph, start_id, where)
        seq = env.shape(graph, q_id, bound)[1]
        if start < 0 or start + seq > rows:
            raise InputError(f"{where}: positions [{start}, {start + seq}) do not fit the "
                             f"KV cache of {rows} rows (max_context_len)")
    ctx.dyn.steps.append(check)


@register("sdpa_with_kv_cache.default", half=True, reference=reference, args=12,
          sizes=sizes.same_as_first)
async def build_sdpa_with_kv_cache(ctx, op):
    await _build(ctx, op, ctx.args(op, 12), None)


def _turned_reference(rope_reference, rope_args):
    """The reference of sdpa on q, k turned by ``rope_reference`` over ``rope_args`` (the
    fused op's args: xq, xk, then its rope arguments at ``rope_args``)."""
    def ref(read, values, args, write=None):
        turned = rope_reference(read, values, [args[0], args[1]] + [args[i] for i in rope_args])
        held = {a: cpu.Array(tuple(read(a).shape), x) for a, x in zip(args[:2], turned)}
        return reference(lambda vid: held[vid] if vid in held else read(vid), values,
                         args[:11] + args[-1:], write)
    return ref


@dataclass(frozen=True)
class Rope:
    """RoPE turned into q and k as the kernels read them: the kernel (its q_load /
    k_load), the tables, their width (HF: the dims turned) and rows, the start (a slot
    key; rows start + s) and the rope's own entry (shaders/rope.wgsl) for prefills."""

    kernel: Kernel
    cos_id: int
    sin_id: int
    rot: int
    rows: int
    start: tuple | None = None
    entry: str = "interleaved"


def _tables(ctx, op, args):
    xq = ctx.float_tensor(args[0], op)
    cos, sin = ctx.float_tensor(args[11], op), ctx.float_tensor(args[12], op)
    if len(xq.shape) != 4 or xq.shape[3] % 2 or tuple(sin.shape) != tuple(cos.shape) \
            or not cos.shape:
        raise FormatError(f"{op.name}: q {list(xq.shape)} should be [1, S, H, D] with D even "
                          f"and the tables {list(cos.shape)} / {list(sin.shape)} alike",
                          field=ctx.where(op))
    return xq, cos


@register(SDPA_ROPE, half=True, reference=_turned_reference(rope_reference, (11, 12)),
          args=14, sizes=sizes.same_as_first)
async def build_sdpa_rope(ctx, op):
    """``pte_webgpu.sdpa_rope [xq, xk, v, k_cache, v_cache, start_pos, seq_len, attn_mask,
    dropout_p, is_causal, scale, cos, sin, out]``: et_vk.apply_rotary_emb (interleaved
    pairs, tables [S, D/2]) whose outputs only sdpa_with_kv_cache reads, as one op
    (runtime/fusion_rope.py): the decode kernels turn q and k as they read them, so the
    rope's dispatch and its outputs are gone; executes of many rows (prefill) run the
    rope's own kernel into scratch buffers first (``_turn_first``)."""
    args = ctx.args(op, 14)
    xq, cos = _tables(ctx, op, args)
    if cos.numel != xq.shape[1] * xq.shape[3] // 2:
        raise FormatError(f"{op.name}: tables {list(cos.shape)} should hold [S, D/2] of q "
                          f"{list(xq.shape)}", field=ctx.where(op))
    ctx.note_kernel(op, fused="rope + sdpa")
    await _build(ctx, op, args[:11] + args[13:],
                 Rope(ROPE_KERNEL, args[11], args[12], xq.shape[3], xq.shape[1]))


@register(SDPA_ROPE_ROWS, half=True,
          reference=_turned_reference(rope_reference_rows, (11, 12, 13)),
          args=15, sizes=sizes.same_as_first)
async def build_sdpa_rope_rows(ctx, op):
    """``pte_webgpu.sdpa_rope_rows [xq, xk, v, k_cache, v_cache, start_pos, seq_len,
    attn_mask, dropout_p, is_causal, scale, cos, sin, rope_start, out]``: sdpa_rope whose
    tables were rows [rope_start, rope_start + S) sliced from full tables [T, D/2] (the
    llama export's freqs at input_pos): the kernels read rows rope_start + s of the full
    tables, so the slices' two dispatches are gone too (runtime/fusion_rope.py)."""
    args = ctx.args(op, 15)
    xq, cos = _tables(ctx, op, args)
    half_dim = xq.shape[3] // 2
    if len(cos.shape) != 2 or cos.shape[1] != half_dim:
        raise FormatError(f"{op.name}: tables {list(cos.shape)} should be [T, {half_dim}]",
                          field=ctx.where(op))
    ctx.note_kernel(op, fused="rope + sdpa")
    await _build(ctx, op, args[:11] + args[14:],
                 Rope(ROPE_ROWS_KERNEL, args[11], args[12], xq.shape[3], cos.shape[0],
                      int_key(ctx, op, args[13], default=0), "interleaved_rows"))


@register(SDPA_ROPE_HF, half=True, reference=_turned_reference(rope_reference_hf, (11, 12, 13)),
          args=15, sizes=sizes.same_as_first)
async def build_sdpa_rope_hf(ctx, op):
    """``pte_webgpu.sdpa_rope_hf [xq, xk, v, k_cache, v_cache, start_pos, seq_len,
    attn_mask, dropout_p, is_causal, scale, cos, sin, rope_start, out]``: the same for
    et_vk.apply_rotary_emb_hf (the first R dims turned half against half by rows
    rope_start + s of the full tables [T, R])."""
    args = ctx.args(op, 15)
    xq, cos = _tables(ctx, op, args)
    rot = cos.shape[-1]
    if rot % 2 or rot > xq.shape[3]:
        raise FormatError(f"{op.name}: table width {rot} must be even and at most the head "
                          f"dim", field=ctx.where(op))
    ctx.note_kernel(op, fused="rope + sdpa")
    await _build(ctx, op, args[:11] + args[14:],
                 Rope(ROPE_HF_KERNEL, args[11], args[12], rot, cos.numel // rot if rot else 0,
                      int_key(ctx, op, args[13], default=0), "hf"))


async def _build(ctx, op, args, rope) -> None:
    """sdpa_with_kv_cache from its 12 args; ``rope``: how q and k are turned as they are
    read (SDPA_ROPE, SDPA_ROPE_HF), else None."""
    (q_id, k_id, v_id, kc_id, vc_id, start_id, _seq_len, mask_id, drop_id, causal_id,
     scale_id, out_id) = args
    q, k, v = (ctx.float_tensor(i, op) for i in (q_id, k_id, v_id))
    kc, vc, out = (ctx.float_tensor(i, op) for i in (kc_id, vc_id, out_id))
    if not isinstance(ctx.graph.values[mask_id], Null):
        raise UnsupportedError(f"{op.name}: an explicit attn_mask is not supported "
                               f"({ctx.where(op)})")
    dropout = ctx.graph.values[drop_id]
    if isinstance(dropout, Scalar) and float(dropout.value) != 0.0:
        raise UnsupportedError(f"{op.name}: dropout_p {dropout.value} is not supported")
    causal = ctx.graph.values[causal_id]
    if isinstance(causal, Scalar) and causal.kind == "bool" and not causal.value:
        raise UnsupportedError(f"{op.name}: is_causal=False is not supported "
                               f"({ctx.where(op)})")
    if len(q.shape) != 4 or q.shape[0] != 1:
        raise FormatError(f"{op.name}: q {list(q.shape)} should be [1, S, H, D]",
                          field=ctx.where(op))
    _, s_bound, heads, dim = q.shape
    kv_shape = tuple(k.shape)
    if len(kv_shape) != 4 or kv_shape[1] != s_bound or kv_shape[3] != dim or \
            tuple(v.shape) != kv_shape:
        raise FormatError(f"{op.name}: k {list(k.shape)} / v {list(v.shape)} do not match q "
                          f"{list(q.shape)}", field=ctx.where(op))
    kv_heads = kv_shape[2]
    if kv_heads == 0 or heads % kv_heads:
        raise FormatError(f"{op.name}: {heads} query heads do not group over {kv_heads} KV "
                          "heads", field=ctx.where(op))
    if len(kc.shape) != 4 or tuple(kc.shape[2:]) != (kv_heads, dim) or \
            tuple(vc.shape) != tuple(kc.shape):
        raise FormatError(f"{op.name}: caches {list(kc.shape)} / {list(vc.shape)} should be "
                          f"[1, T, {kv_heads}, {dim}]", field=ctx.where(op))
    if tuple(out.shape) != tuple(q.shape):
        raise FormatError(f"{op.name}: output {list(out.shape)} should be q's shape "
                          f"{list(q.shape)}", field=ctx.where(op))
    scale = ctx.float_scalar(scale_id, 1.0 / math.sqrt(dim))
    tables = (rope.cos_id, rope.sin_id) if rope else ()
    halves = {ctx.half(i) for i in (q_id, k_id, v_id, kc_id, vc_id, out_id, *tables)}
    if len(halves) != 1:
        raise UnsupportedError(f"{op.name}: mixed float16/float32 operands ({ctx.where(op)})")
    half = halves.pop()
    _check_positions(ctx, op, start_id, q_id, kc.shape[1])
    if not out.numel:
        return
    keys = [int_key(ctx, op, start_id), size_key(ctx, q_id, 1)]
    ints, (start_slot, len_slot, *rope_slot) = slots(
        ctx, op, keys + ([rope.start] if rope and rope.start else []))
    lanes = pow2_lanes(ctx.device.info.traits, dim)
    form = VARIANTS.pick(ctx, op, dim=dim)
    parts = min(MAX_PARTS, -(-kc.shape[1] // SPAN_ROWS)) if form in ("split", "tiles") else 1
    params = ctx.uniform(PARAMS.pack(heads=heads, kv_heads=kv_heads, head_dim=dim,
                                     cache_rows=kc.shape[1], s_bound=s_bound,
                                     start_slot=start_slot, len_slot=len_slot, scale=scale,
                                     parts=parts, rope_rot=rope.rot if rope else 0,
                                     rope_rows=rope.rows if rope else 0,
                                     rope_slot=rope_slot[0] if rope_slot else 0),
                         f"{op.name} params")
    io = [(0, q_id), (1, k_id), (2, v_id), (3, kc_id), (4, vc_id), (6, ints), (7, params)]
    kernel = KERNEL
    if rope is not None:
        kernel = rope.kernel
        io += [(9, rope.cos_id), (10, rope.sin_id)]
    if form == "elements":
        wg = min(64, elementwise_workgroup(ctx))
        attend = await ctx.pipeline(kernel, {"wg_size": wg}, "attend", half=half)
        ctx.dispatch(op, attend, io + [(5, out_id)], ctx.grid(-(-out.numel // wg)))
        follow_actual_size(ctx, out_id, wg)
        return
    # a workgroup per (s, h); with split, one-row executes take the flash-decoding pair
    row = heads * dim
    dynamic = ctx.dyn.is_dynamic(ctx.graph_key, out_id)
    split = form in ("split", "tiles") and (s_bound == 1 or dynamic)
    many = _attend_tiles if form == "tiles" else _attend_rows  # executes of many rows
    # Executes of many query rows (a prefill) turn q and k once, by the rope's own
    # kernel, then attend with the plain one: turned as read, each k row would be turned
    # again for every query row (1024-token prefill on an H100: 2.5x slower). The fold
    # stays for one-row executes (decode), where each k row is read once.
    turn_first = rope is not None and s_bound > 1
    if turn_first:
        turned = await _turn_first(ctx, op, rope, q_id, k_id, out_id, row, ints,
                                   rope_slot[0] if rope_slot else 0, half)
        plain = [(0, turned[0]), (1, turned[1])] + [b for b in io if 2 <= b[0] <= 7]
        await many(ctx, op, KERNEL, plain + [(5, out_id)], out_id, s_bound, heads, dim,
                   lanes, half, lambda grid: lambda n: grid(n) if n > row else 0)
    if turn_first and dynamic and not split:  # the rows form's one-row twin, rope folded
        attend = await ctx.pipeline(kernel, {"wg_size": lanes}, "attend_rows", half=half)
        ctx.dispatch(op, attend, io + [(5, out_id)], ctx.grid(s_bound * heads))
        follow_actual_size(ctx, out_id, lambda n: -(-n // dim) if n <= row else 0,
                           alternative=True)
    if not turn_first and (s_bound > 1 or not split):
        await many(ctx, op, kernel, io + [(5, out_id)], out_id, s_bound, heads, dim, lanes,
                   half, lambda grid: lambda n: 0 if split and n <= row else grid(n))
    if split:
        if s_bound > 1:
            ctx.note_kernel(op, twin="split")
        await _record_split(ctx, op, kernel, io, out_id, heads, parts, lanes, half,
                            alternative=s_bound > 1,
                            merge_into=ctx.graph.meta.get("merged", {}).get(out_id))


async def _attend_rows(ctx, op, kernel, binds, out_id, s_bound, heads, dim, lanes, half,
                       when) -> None:
    """attend_rows: a workgroup per query row and head. ``when(grid)``: the function of
    the output's actual elements that the dispatch follows, given ``grid`` (this form's
    workgroups for n elements)."""
    attend = await ctx.pipeline(kernel, {"wg_size": lanes}, "attend_rows", half=half)
    ctx.dispatch(op, attend, binds, ctx.grid(s_bound * heads))
    follow_actual_size(ctx, out_id, when(lambda n: -(-n // dim)))


async def _attend_tiles(ctx, op, kernel, binds, out_id, s_bound, heads, dim, lanes, half,
                        when) -> None:
    """attend_tiles (flash attention, ops/attention_tiles.py): a workgroup per tile of query
    rows and head; ``when`` as for _attend_rows. ``kernel``: the plain one (a prefill
    turns q and k by the rope's own dispatch first)."""
    t = attention_tiles.plan(dim, ctx.device.info.traits.workgroup_storage)
    # the parts' shares for the longest call, in one buffer for every layer; fewer parts
    # where the adapter cannot bind that much (one: no shares, no merge)
    limit = min(ctx.device.limit("maxStorageBufferBindingSize", 1 << 27),
                ctx.device.limit("maxBufferSize", 1 << 28))
    parts = attention_tiles.PARTS
    while parts > 1 and attention_tiles.parts_scratch(s_bound, heads, dim, parts) > limit:
        parts //= 2
    shares = ctx.resources.scratch(
        "sdpa tiles parts", attention_tiles.parts_scratch(s_bound, heads, dim, parts))
    shader = attention_tiles.kernel(kernel, t, parts)
    attend = await ctx.pipeline(shader, {"wg_size": attention_tiles.LANES}, "attend_tiles",
                                half=half)
    ctx.dispatch(op, attend, binds + [(8, shares)], ctx.grid(-(-s_bound // t.rows) * heads * parts))
    follow_actual_size(ctx, out_id,
                       when(lambda n: -(-n // (heads * dim * t.rows)) * heads * parts))
    if parts > 1:  # the rows that several parts cover, merged
        combine = await ctx.pipeline(shader, {"wg_size": lanes}, "combine_tiles", half=half)
        ctx.dispatch(op, combine, [b for b in binds if b[0] in (5, 6, 7)] + [(8, shares)],
                     ctx.grid(s_bound * heads))
        follow_actual_size(ctx, out_id, when(lambda n: -(-n // dim)))


async def _turn_first(ctx, op, rope: Rope, q_id: int, k_id: int, out_id: int, row: int,
                      ints, start_slot: int, half: bool) -> tuple:
    """The rope's own dispatch (ops/rope.py) turning q and k into scratch buffers, run
    for executes of more than one query row (``row`` = heads x head_dim elements each):
    (turned q, turned k)."""
    # one pair for every layer: each attention writes and reads them in its own dispatches
    turned = (ctx.resources.scratch("rope-turned q", ctx.bind_size(q_id)),
              ctx.resources.scratch("rope-turned k", ctx.bind_size(k_id)))
    await rotate(ctx, op, rope.entry, (q_id, k_id, *turned), rope.cos_id, rope.sin_id,
                 rope.rot, rope.rows, ints, start_slot, half, follow=out_id, above=row)
    return turned


async def _record_split(ctx, op, kernel, io, out_id, heads: int, parts: int, lanes: int,
                        half: bool, alternative: bool, merge_into: int | None) -> None:
    """The flash-decoding pair for one query row: heads x ``parts`` workgroups write
    partial softmaxes into a scratch buffer, then one invocation per output element
    merges them. ``alternative``: the twin of a
    rows dispatch, run only for executes of one row. ``merge_into``: the input of the
    linear that alone reads the output (runtime/fusion_merge.py), which is left the merge
    (ops/attention_merge.py) where it can take it."""
    dim = ctx.graph.values[out_id].shape[3]
    row, groups = heads * dim, heads * parts  # one query row's elements; workgroups
    partials = ctx.resources.buffer(4 * groups * (dim + 2), f"{ctx.where(op)} attention parts")
    split = await ctx.pipeline(kernel, {"wg_size": lanes}, "attend_split", half=half)
    ctx.dispatch(op, split, io + [(8, partials)], ctx.grid(groups))
    follow_actual_size(ctx, out_id, lambda n: groups if n <= row else 0,
                       alternative=alternative)

    async def merge(into: int = out_id) -> None:  # into: out, or the linear's input
        # a workgroup per head: the row's own lanes (combine's tree needs a power of two)
        combine = await ctx.pipeline(KERNEL, {"wg_size": lanes}, "combine", half=half)
        ints_params = [b for b in io if b[0] in (6, 7)]  # what combine reads besides parts
        ctx.dispatch(op, combine, [(5, into)] + ints_params + [(8, partials)],
                     ctx.grid(heads))
        follow_actual_size(ctx, out_id, lambda n: heads if n <= row else 0,
                           alternative=alternative)

    shape = (heads, dim, parts)
    if merge_into is not None and can_merge(*shape):
        # its own dispatch, where the linear's form does not merge, writes the linear's
        # input (a reshape of out that may be a copy made before)
        ctx.merges[merge_into] = MergedInput(ctx, op, merge_into, partials, shape,
                                             lambda: merge(merge_into))
    else:
        await merge()


def reference_update_cache(read, values, args, write=None):
    """value rows into the cache at start_pos; ``write(vid, values)`` keeps the cache."""
    value, cache = read(args[0]), read(args[1])
    start = ref_int(read, values, args[2])
    row = prod(value.shape[2:])
    seq, rows = value.shape[1], cache.shape[1]
    if start < 0 or start + seq > rows:
        raise InputError(f"update_cache: positions [{start}, {start + seq}) do not fit the "
                         f"cache of {rows} rows")
    updated = list(cache.values)
    updated[start * row:(start + seq) * row] = value.values
    if write is not None:
        write(args[1], updated)
    return [0.0] * values[args[3]].numel


def _placeholder_size(op, shape, integer, values):
    """update_cache's out keeps its shape; the value's actual rows are read at execute."""
    return {op.args[-1]: tuple(values[op.args[-1]].shape)}


@register("update_cache.default", half=True, reference=reference_update_cache, args=4,
          sizes=_placeholder_size)
async def build_update_cache(ctx, op):
    value_id, cache_id, start_id, out_id = ctx.args(op, 4)
    value, cache = ctx.float_tensor(value_id, op), ctx.float_tensor(cache_id, op)
    if len(value.shape) != 4 or len(cache.shape) != 4 or value.shape[0] != 1 or \
            cache.shape[0] != 1 or tuple(value.shape[2:]) != tuple(cache.shape[2:]):
        raise FormatError(f"{op.name}: value {list(value.shape)} and cache "
                          f"{list(cache.shape)} should be [1, S, H, D] and [1, T, H, D]",
                          field=ctx.where(op))
    if ctx.half(value_id) != ctx.half(cache_id):
        raise UnsupportedError(f"{op.name}: mixed float16/float32 operands ({ctx.where(op)})")
    _check_positions(ctx, op, start_id, value_id, cache.shape[1])
    if not value.numel:
        return
    ints, (start_slot, len_slot) = slots(ctx, op, [int_key(ctx, op, start_id),
                                                   size_key(ctx, value_id, 1)])
    params = ctx.uniform(PARAMS.pack(heads=value.shape[2], kv_heads=value.shape[2],
                                     head_dim=value.shape[3], cache_rows=cache.shape[1],
                                     s_bound=value.shape[1], start_slot=start_slot,
                                     len_slot=len_slot), f"{op.name} params")
    wg = min(64, elementwise_workgroup(ctx))
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, "update", half=ctx.half(cache_id))
    ctx.dispatch(op, pipeline, [(1, value_id), (3, cache_id), (6, ints), (7, params)],
                 ctx.grid(-(-value.numel // wg)))
