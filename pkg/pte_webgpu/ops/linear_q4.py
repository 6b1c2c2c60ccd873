"""4-bit weight linears (layouts: docs/quantized-formats.md, "linear_q4gsw / linear_qcs4w"):

- ``et_vk.linear_q4gsw.default [x, weights, scales, group_size, bias|Null, out]``:
  weights uint8 [N, ceil8(K) / 2], byte j of a row = (w[2j + 1] + 8) << 4 | (w[2j] + 8);
  scales [K / group, N'] (N' >= N, ExecuTorch pads it to a multiple of 4); value
  w[n, k] * scales[k / group, n]; bias [N] (or padded).
- ``et_vk.linear_qcs4w.default [x, weights, scales, out]``: weights uint8 [N, K / 2] with
  the HIGH nibble first (byte j = (w[2j] + 8) << 4 | (w[2j + 1] + 8)), scales [N]: value
  w[n, k] * scales[n]. Repacked at load into q4gsw's layout (nibbles swapped, rows padded
  to whole u32 words) with one group spanning K, so both run the same kernels.

``pte_webgpu.linear_q4gsw_offsets [x, weights, scales, group_size, bias|Null, offsets,
out]``: q4gsw with a float offset per group, value w[n, k] * scales[k / group, n] +
offsets[n, k / group] (offsets [N, K / group], torch's linear layout): what
``q4gsw(x) + linear(group sums of x, offsets)`` computes (export/exact_q4.py: a GGUF's
Q4_1 blocks), folded into one op by runtime/fusion_q4.py.

``pte_webgpu.fused_linear_q4gsw [x, weights, scales, group_size, bias|Null, layout,
offsets, outs]``: q4gsw linears sharing an input (runtime/fusion_q4.py), their packed
weights stacked along N at load and their scales one after another (``layout``: each
part's scale row stride, then where its scales begin), each column range written to its
own output; ``offsets``: Null, or a list of each part's offsets tensor.

Kernels: ops/linear_q4_choice.py (the variants and the rule), shaders/linear_q4.wgsl.
"""

from __future__ import annotations

import math
import struct
from array import array
from dataclasses import dataclass, replace
from functools import cache
from math import prod

from ..errors import FormatError, UnsupportedError
from ..model.graph import Null, TensorValue
from ..shaders.compose import Binding, Entry, Kernel, Uniform, fill, sections
from . import sizes
from .args import int_arg
from .common import merge_consts
from .exec_ints import follow_actual_size
from .fused_elementwise import GATED_MATH, chain_function
from .fused_linear import MAX_SPLIT, fused_outputs
from .linear_q4_choice import (VARIANTS, WIDE_LANES, Variant, cols_lanes, cols_share, keep_parts,
                               keep_reps, row_forms)
from .registry import define

Q4GSW, QCS4W = "et_vk.linear_q4gsw.default", "et_vk.linear_qcs4w.default"
FUSED = "pte_webgpu.fused_linear_q4gsw"
OFFSETS = "pte_webgpu.linear_q4gsw_offsets"
ARG_COUNTS = {Q4GSW: 6, OFFSETS: 7, FUSED: 8}  # what ``plan`` tells them apart by
TILE = 32  # the tiled form's outputs per side

PARAMS = Uniform(("m", "u32"), ("n", "u32"), ("k", "u32"), ("words", "u32"),
                 ("group", "u32"), ("has_bias", "u32"), ("tiles_n", "u32"), ("tiles", "u32"),
                 ("n0", "u32"), ("n1", "u32"),  # where the stacked parts 1, 2 begin
                 ("s_stride0", "u32"), ("s_stride1", "u32"), ("s_stride2", "u32"),
                 ("s_off1", "u32"), ("s_off2", "u32"),  # scales: each part's row, start
                 ("eps", "f32"))  # the norm prologue's (ops/linear_q4_norm.py)
_BINDINGS = (Binding(1, "weight", type="u32"), Binding(2, "out", "read_write"),
             Binding(4, "bias"))
# the input as vec4s where K % 8 == 0 (rows start on a vec4), else as elements
_INPUT = {True: Binding(0, "input4", type="elem4"), False: Binding(0, "input")}
EPILOGUES = {"": (), "split2": (Binding(6, "out1", "read_write"),),
             "split3": (Binding(6, "out1", "read_write"), Binding(7, "out2", "read_write")),
             "residual": (Binding(6, "resid"),)}  # ops/linear_q4_residual.py
_ENTRIES = {"dot": Entry("main", "dot_item", "params.m * params.n"),
            "gemv": Entry("main", "gemv_item", "params.tiles", per="group"),
            "gemvsg": Entry("main", "gemv_item_sg", "params.tiles", per="group", subgroups=True),
            "wide": Entry("main", "wide_item", "params.tiles", per="group", subgroups=True),
            "keep": Entry("main", "keep_item", "params.tiles", per="group", subgroups=True),
            "cols": Entry("main", "cols_item", "params.tiles", per="group", subgroups=True),
            "tiled": Entry("main", "tiled_item", "params.tiles", per="group")}
# the wide and keep forms' 16-byte view of the packed weight
WIDE_KINDS = ("wide", "keep")  # one row, 16-byte loads, the scales relaid by column
_WIDE_BINDINGS = (Binding(1, "weight16", type="vec4<u32>"),)  # (the input: _INPUT[True])
SG_KINDS = ("gemvsg", "cols") + WIDE_KINDS  # forms that name subgroup builtins
GEMV_KINDS = ("gemv", "gemvsg")  # a workgroup per column, its lanes across K


def kernel(kind: str, epilogue: str = "", scales_f32: bool = False,
           browser: bool = True, rows: int = 1, whole: bool = True,
           offsets: bool = False, norm: bool = False, cols: int = 8, share: int = 4,
           gate: tuple = (), merge: tuple = ()) -> Kernel:
    """The shader of one form (``kind``: dot, gemv, gemvsg, wide, keep, cols, tiled) and epilogue;
    ``scales_f32``: float32 scales beside f16 activations; ``browser``: gemvsg's
    ``enable subgroups;`` (Chromium needs it, wgpu-native's naga rejects it); ``rows``:
    input rows per gemv workgroup (1 to 4); ``whole``: the group a multiple of 8 (the
    wide form needs it); ``offsets``: groups with offsets (binding 8, float32); ``norm``
    (wide and keep forms): the RMSNorm prologue, its weight at binding 9; ``cols``, ``share``
    (the cols form): columns per invocation, lanes sharing their input loads; ``gate``
    (wide and keep forms): the steps of a two-input chain computed as the row is loaded,
    its second input at binding 9 (ops/linear_q4_gated.py); ``merge`` (wide and keep
    forms): the split attention's (heads, head dim, parts), its parts at binding 9 merged
    as the row is loaded (ops/attention_merge.py)."""
    sg = kind in SG_KINDS
    return _kernel(kind, epilogue, scales_f32, browser or not sg,
                   rows if kind.startswith("gemv") else 1, whole or kind in WIDE_KINDS, offsets,
                   norm and kind in WIDE_KINDS, (cols, share) if kind == "cols" else (0, 0),
                   tuple(gate) if takes_gate(kind, whole) else (),
                   tuple(merge) if kind in WIDE_KINDS else ())


def takes_gate(kind: str, whole: bool) -> bool:
    """Whether a form computes a gated chain as it loads its input: the one-row forms,
    and the gemv forms where K % 8 == 0 (their input read as vec4s)."""
    return kind in WIDE_KINDS or kind in GEMV_KINDS and whole


_GATES: dict[tuple, int] = {}  # a gated prologue's steps -> its number in kernel names


@cache
def _kernel(kind: str, epilogue: str, scales_f32: bool, browser: bool, rows: int,
            whole: bool, offsets: bool, norm: bool, cols: tuple[int, int],
            gate: tuple = (), merge: tuple = ()) -> Kernel:
    sums = {"gemv": ("sum_part_tree", "sum_tree"),
            "gemvsg": ("sum_part_tree", "sum_subgroups"), "wide": ("wide",),
            "keep": ("wide", "mantissa", "keep"), "cols": ("mantissa", "cols")}.get(kind, ())
    generated = fill("linear_q4_parts", "consts", rows=rows, whole=str(whole).lower(),
                     offsets=str(offsets).lower())
    generated += sections("linear_q4_parts")["offsets_bound" if offsets else "offsets_none"]
    if gate:  # the chain's own step functions, and the f32 math they call
        generated += "".join(sections("f32_math")[f] for f in GATED_MATH) \
            + chain_function(2, gate)
    generated += sections("linear_q4_parts")[
        "x_gated" if gate and kind in GEMV_KINDS else "x_vec4" if whole else "x_scalar"]
    if kind in WIDE_KINDS:  # their one row, normalised or gated as loaded with a prologue
        generated += sections("linear_q4_parts")[
            "row_norm" if norm else "row_gated" if gate else "row_merge" if merge
            else "row_plain"]
        if merge:
            generated += merge_consts(merge)
        if norm:
            generated += fill("snippets", "rare_row4", rows="input4")
    generated += sections("matmul_parts")["put" + (f"_{epilogue}" if epilogue else "")]
    if kind == "cols":
        generated += fill("linear_q4_parts", "cols_const", c=cols[0], share=cols[1])
    generated += "".join(sections("linear_q4_parts")[part] for part in sums)
    scales = Binding(5, "scales", type="f32" if scales_f32 else "elem")
    sg = kind in SG_KINDS
    extra = _WIDE_BINDINGS if kind in WIDE_KINDS else ()
    name = "_".join(filter(None, ("linear_q4", kind, "native" if sg and not browser else "",
                                  epilogue, "sf32" if scales_f32 else "",
                                  f"r{rows}" if kind.startswith("gemv") else "",
                                  "" if whole else "any", "off" if offsets else "",
                                  "norm" if norm else "",
                                  f"gate{_GATES.setdefault(gate, len(_GATES))}" if gate else "",
                                  "merge{}x{}x{}".format(*merge) if merge else "",
                                  f"c{cols[0]}s{cols[1]}" if kind == "cols" else "")))
    bindings = (_INPUT[whole],) + _BINDINGS + extra + (scales,) + EPILOGUES[epilogue] \
        + ((Binding(8, "offsets", type="f32"),) if offsets else ()) \
        + ((Binding(9, "gamma4", type="elem4"),) if norm else ()) \
        + ((Binding(9, "up4", type="elem4"),) if gate else ()) \
        + ((Binding(9, "parts", type="f32"),) if merge else ())
    return Kernel("linear_q4", bindings, PARAMS, uniform_binding=3, generated=generated,
                  entries=(_ENTRIES[kind],), enables=("subgroups",) if sg and browser else (),
                  name=name, snippets=("bits",) if norm else
                  ("bits", "nan_minmax", "attention_merge") if merge else ())


# --- shapes ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Q4Shape:
    m: int
    n: int
    k: int
    words: int  # u32 words per packed weight row
    group: int
    s_stride: int  # scales per group row


def _tensor(values, vid: int, name: str, what: str) -> TensorValue:
    t = values[vid]
    if not isinstance(t, TensorValue):
        raise FormatError(f"{name}: {what} (value {vid}) should be a tensor, found {t.kind}")
    return t


def _float(t: TensorValue, name: str, what: str) -> None:
    if t.dtype is None or t.dtype.name not in ("float32", "float16"):
        raise UnsupportedError(f"{name}: {what} is {getattr(t.dtype, 'name', '?')}; float32 "
                               "or float16 expected")


def q4gsw_shape(values, args, group: int, name: str = Q4GSW, stacked: bool = False) -> Q4Shape:
    """The shape of a q4gsw product ``args`` = (x, weights, scales, ..., out); the
    output's width is the weights' rows unless ``out`` is a list (fused). FormatError
    naming op and shape when the tensors cannot hold it."""
    x, w, s = (_tensor(values, a, name, what)
               for a, what in zip(args[:3], ("input", "weights", "scales")))
    _float(x, name, "the input")
    _float(s, name, "the scales")
    if not x.shape or len(w.shape) != 2 or len(s.shape) != (1 if stacked else 2):
        raise FormatError(f"{name}: input {list(x.shape)}, weights {list(w.shape)} and scales "
                          f"{list(s.shape)} must be [..., K], [N, K/2] and [groups, N]")
    if w.dtype is None or w.dtype.name not in ("uint8", "int8"):
        raise FormatError(f"{name}: packed weights {list(w.shape)} are "
                          f"{getattr(w.dtype, 'name', '?')}, uint8 expected")
    k, (n, width) = x.shape[-1], w.shape
    if group <= 0 or k % group:
        raise FormatError(f"{name}: group size {group} must be positive and divide K = {k} "
                          f"(input {list(x.shape)})")
    if 2 * width < k:
        raise FormatError(f"{name}: packed weights {list(w.shape)} are shorter than K = {k} "
                          f"needs ([N, {-(-k // 8) * 4}])")
    if width % 4:
        raise UnsupportedError(f"{name}: packed weight rows of {width} bytes (weights "
                               f"{list(w.shape)}); rows are read in 4-byte words (ExecuTorch "
                               "pads K to a multiple of 8)")
    groups, s_stride = (k // group, n) if stacked else s.shape  # stacked: fused_layout's
    if groups < k // group or s_stride < n:
        raise FormatError(f"{name}: scales {list(s.shape)} are shorter than K = {k} in groups "
                          f"of {group} by N = {n} need ([{k // group}, {n}])")
    return Q4Shape(prod(x.shape[:-1]), n, k, width // 4, group, s_stride)


def _check_out(values, x_id: int, out_id: int, n: int, name: str) -> None:
    x, out = _tensor(values, x_id, name, "input"), _tensor(values, out_id, name, "output")
    _float(out, name, "the output")
    if tuple(out.shape) != tuple(x.shape[:-1]) + (n,):
        raise FormatError(f"{name}: input {list(x.shape)} and output {list(out.shape)} do "
                          f"not match the weights' N = {n} (out = [..., N])")


def _check_bias(values, b_id: int, n: int, name: str) -> bool:
    if isinstance(values[b_id], Null):
        return False
    b = _tensor(values, b_id, name, "bias")
    _float(b, name, "the bias")
    if len(b.shape) != 1 or b.numel < n:
        raise FormatError(f"{name}: bias {list(b.shape)} should hold N = {n} values")
    return True


def check_finite(data, dtype_name: str, name: str, where: str) -> None:
    """FormatError when constant scales ``data`` (their file bytes) hold NaN or inf."""
    code = "e" if dtype_name == "float16" else "f"
    count = len(data) // struct.calcsize(code)
    vals = struct.unpack(f"<{count}{code}", bytes(data[:count * struct.calcsize(code)]))
    if math.isfinite(math.fsum(vals)) if count < 4096 else math.isfinite(sum(vals)):
        return  # (a sum of finite values may overflow: then the scan below finds none)
    bad = next((i for i, v in enumerate(vals) if not math.isfinite(v)), None)
    if bad is not None:
        raise FormatError(f"{name}: scale {bad} is {vals[bad]} (scales must be finite)",
                          field=where)


# --- builds ---------------------------------------------------------------------------
def plan(ctx, op, args, outs=None) -> dict:
    """``product``'s arguments for a q4gsw product ``args``, told apart by their count: 6
    (et_vk.linear_q4gsw), 7 (with offsets), 8 (fused: fused_plan, ``outs`` as there);
    checked, errors naming the op."""
    if len(args) == ARG_COUNTS[FUSED]:
        return fused_plan(ctx, op, args, outs)
    x_id, w_id, s_id, g_id, b_id, out_id = args[:5] + args[-1:]
    values = ctx.graph.values
    shape = _checked(ctx, op, q4gsw_shape(values, args, int_arg(ctx, g_id, op), op.name))
    _check_out(values, x_id, out_id, shape.n, op.name)
    bias = _check_bias(values, b_id, shape.n, op.name)
    _check_stored(ctx, op, b_id, bias, out_id)
    _check_scales(ctx, op, s_id)
    offsets = None
    if len(args) == ARG_COUNTS[OFFSETS]:
        offsets = scale_laid_offsets(ctx, op, [args[5]], [shape.n], [shape.s_stride], [0],
                                     shape.k // shape.group, values[s_id].numel)
    bindings = [(0, x_id), (1, w_id), (2, out_id), (4, b_id if bias else s_id), (5, s_id)]
    return dict(bindings=bindings, shape=shape, has_bias=bias, out_id=out_id, out_n=shape.n,
                s_id=s_id, offsets=offsets)


async def build_q4gsw(ctx, op):
    await product(ctx, op, **plan(ctx, op, ctx.args(op, 6)))


async def build_offsets(ctx, op):
    await product(ctx, op, **plan(ctx, op, ctx.args(op, 7)))


def offset_values(values, o_id: int, n: int, groups: int, name: str) -> TensorValue:
    """The offsets tensor ``o_id`` checked: float [N, K / group] (torch's linear layout)."""
    o = _tensor(values, o_id, name, "offsets")
    _float(o, name, "the offsets")
    if tuple(o.shape) != (n, groups):
        raise FormatError(f"{name}: offsets {list(o.shape)} should be [N, K / group] = "
                          f"[{n}, {groups}]")
    return o


def scale_laid_offsets(ctx, op, ids, widths, strides, starts, groups: int, total: int):
    """(buffer, float32 values) of the parts' offsets (``ids``, each [width, groups]) laid
    out as their scales: part p's column j, group g at starts[p] + g * strides[p] + j, zero
    in the padding; a FormatError naming the op when one is not a finite float constant."""
    out = array("f", bytes(4 * total))
    for o_id, width, stride, start in zip(ids, widths, strides, starts):
        o = offset_values(ctx.graph.values, o_id, width, groups, op.name)
        data = ctx.constant_bytes(o_id)
        if data is None:
            raise UnsupportedError(f"{op.name}: offsets {list(o.shape)} must be a constant "
                                   f"({ctx.where(op)})")
        check_finite(data, o.dtype.name, f"{op.name} offsets {list(o.shape)}", ctx.where(op))
        src = array("f", struct.unpack(f"<{width * groups}{'e' if o.dtype.itemsize == 2 else 'f'}",
                                       bytes(data[:width * groups * o.dtype.itemsize])))
        for g in range(groups):
            out[start + g * stride:start + g * stride + width] = src[g::groups]
    buf = ctx.resources.buffer(max(4, 4 * total), f"{ctx.where(op)} offsets")
    ctx.device.write_buffer(buf, out.tobytes())
    return buf, out.tobytes()


def fused_layout(values, args, name: str = FUSED, outs=None):
    """(shape, output widths, scales strides, scales offsets) of a fused q4gsw op ``args``
    = (x, weights, scales, group, bias, layout, offsets, outs); layout = the parts' scale
    row strides, then where each part's scales begin; ``outs``: the outputs' ids, when not
    args[7]'s (ops/linear_q4_norm.py)."""
    outs = fused_outputs(values, args[7]) if outs is None else outs
    layout = values[args[5]]
    items = tuple(getattr(layout, "items", ()))
    if not 2 <= len(outs) <= MAX_SPLIT or len(items) != 2 * len(outs):
        raise FormatError(f"{name}: 2 to {MAX_SPLIT} outputs and a layout of 2 per output, "
                          f"found {len(outs)} and {len(items)}")
    shape = q4gsw_shape(values, args, values[args[3]].value, name, stacked=True)
    widths = [_tensor(values, o, name, "output").shape[-1] if values[o].shape else 0
              for o in outs]
    strides, offsets = list(items[:len(outs)]), list(items[len(outs):])
    total = _tensor(values, args[2], name, "scales").numel
    groups = shape.k // shape.group
    ends = offsets[1:] + [total]
    if sum(widths) != shape.n or any(
            st < w or off + groups * st > end
            for st, w, off, end in zip(strides, widths, offsets, ends)):
        raise FormatError(f"{name}: outputs {widths} wide, weights N = {shape.n}, scales "
                          f"strides {strides} at {offsets} of {total} do not fit")
    for o, width in zip(outs, widths):
        _check_out(values, args[0], o, width, name)
    return replace(shape, s_stride=strides[0]), widths, strides, offsets


def fused_offsets(values, args, count: int, name: str = FUSED) -> list[int] | None:
    """The parts' offsets tensors of a fused op (None: symmetric groups)."""
    o = values[args[6]]
    if isinstance(o, Null):
        return None
    items = list(getattr(o, "items", ()))
    if getattr(o, "kind", None) != "value_list" or len(items) != count:
        raise FormatError(f"{name}: offsets should be Null or a list of {count} tensors")
    return items


def fused_plan(ctx, op, args, outs=None) -> dict:
    """``plan`` of a fused op's ``args``; ``outs``: the outputs' ids, when not args[7]'s."""
    x_id, w_id, s_id, g_id, b_id, layout_id, o_id, outs_id = args
    values = ctx.graph.values
    outs = fused_outputs(values, outs_id) if outs is None else outs
    int_arg(ctx, g_id, op)
    try:
        shape, widths, strides, offsets = fused_layout(values, args, op.name, outs)
    except FormatError as e:
        raise FormatError(str(e), field=ctx.where(op)) from None
    shape = _checked(ctx, op, shape)
    bias = _check_bias(values, b_id, shape.n, op.name)
    _check_stored(ctx, op, b_id, bias, outs[0])
    _check_scales(ctx, op, s_id)
    try:
        parts = fused_offsets(values, args, len(outs), op.name)
    except FormatError as e:
        raise FormatError(str(e), field=ctx.where(op)) from None
    laid = parts and scale_laid_offsets(ctx, op, parts, widths, strides, offsets,
                                        shape.k // shape.group, values[s_id].numel)
    n0 = widths[0]
    n1 = n0 + widths[1] if len(outs) > 2 else shape.n
    split = dict(n0=n0, n1=n1, s_stride0=strides[0], s_stride1=strides[1],
                 s_stride2=strides[-1], s_off1=offsets[1], s_off2=offsets[-1])
    bindings = [(0, x_id), (1, w_id), (2, outs[0]), (4, b_id if bias else s_id), (5, s_id)]
    bindings += [(6 + i, o) for i, o in enumerate(outs[1:])]
    ctx.note_kernel(op, fused=f"{len(outs)} q4 linears")
    return dict(bindings=bindings, shape=shape, has_bias=bias, out_id=outs[0],
                out_n=widths[0], s_id=s_id, epilogue=("", "", "split2", "split3")[len(outs)],
                split=split, offsets=laid or None)


async def build_fused(ctx, op):
    await product(ctx, op, **fused_plan(ctx, op, ctx.args(op, 8)))


async def build_qcs4w(ctx, op):
    x_id, w_id, s_id, out_id = ctx.args(op, 4)
    values = ctx.graph.values
    x, w = _tensor(values, x_id, op.name, "input"), _tensor(values, w_id, op.name, "weights")
    n, k = qcs4w_dims(values, op.args, op.name)
    _check_out(values, x_id, out_id, n, op.name)
    _check_scales(ctx, op, s_id)
    data = ctx.constant_bytes(w_id)
    if data is None:
        raise UnsupportedError(f"{op.name}: weights {list(w.shape)} must be a constant "
                               f"({ctx.where(op)})")
    packed = repack_qcs4w(data, n, w.shape[1])
    buf = ctx.resources.buffer(len(packed), f"{ctx.label} value {w_id} repacked")
    ctx.device.write_buffer(buf, packed)
    words = len(packed) // 4 // max(n, 1)
    shape = _checked(ctx, op, Q4Shape(prod(x.shape[:-1]), n, k, words, k, 0))  # one group
    bindings = [(0, x_id), (1, buf), (2, out_id), (4, s_id), (5, s_id)]
    await product(ctx, op, bindings, shape, False, out_id, n, s_id)


def qcs4w_dims(values, args, name: str = QCS4W) -> tuple[int, int]:
    x, w, s = (_tensor(values, a, name, what)
               for a, what in zip(args[:3], ("input", "weights", "scales")))
    _float(x, name, "the input")
    _float(s, name, "the scales")
    if not x.shape or len(w.shape) != 2 or w.dtype is None or w.dtype.name not in (
            "uint8", "int8"):
        raise FormatError(f"{name}: input {list(x.shape)} and weights {list(w.shape)} must be "
                          "[..., K] and uint8 [N, K/2]")
    (n, width), k = w.shape, x.shape[-1]
    if 2 * width != k:
        raise FormatError(f"{name}: packed weights {list(w.shape)} hold K = {2 * width}, the "
                          f"input {list(x.shape)} K = {k}")
    if len(s.shape) != 1 or s.numel < n:
        raise FormatError(f"{name}: scales {list(s.shape)} should hold N = {n} values")
    return n, k


_SWAP = bytes(((b & 15) << 4) | (b >> 4) for b in range(256))


def repack_qcs4w(data, n: int, width: int) -> bytes:
    """qcs4w's [N, width] bytes (high nibble first) as q4gsw's rows: nibbles swapped, each
    row padded with zero weights (nibble 8) to whole u32 words."""
    swapped = bytes(data[:n * width]).translate(_SWAP)
    pad = -width % 4
    if not pad:
        return swapped
    fill = b"\x88" * pad
    return b"".join(swapped[i * width:(i + 1) * width] + fill for i in range(n))


def _checked(ctx, op, shape: Q4Shape) -> Q4Shape:
    for what, v in (("N", shape.n), ("K", shape.k), ("M", shape.m)):
        if v >= 1 << 31:
            raise UnsupportedError(f"{op.name}: {what} = {v} is beyond the kernels' range "
                                   f"({ctx.where(op)})")
    return shape


def _check_stored(ctx, op, b_id: int, has_bias: bool, out_id: int) -> None:
    """The kernels read the bias in the output's stored type."""
    if has_bias and ctx.half(b_id) != ctx.half(out_id):
        raise UnsupportedError(f"{op.name}: bias {ctx.graph.values[b_id].dtype.name} beside "
                               f"{ctx.graph.values[out_id].dtype.name} activations "
                               f"({ctx.where(op)})")


def _check_scales(ctx, op, s_id: int) -> None:
    t = ctx.graph.values[s_id]
    if t.dtype.name == "float16" and ctx.half(s_id) and not ctx.half(op.args[0]):
        raise UnsupportedError(f"{op.name}: float16 scales beside float32 activations "
                               f"({ctx.where(op)})")
    data = ctx.constant_bytes(s_id)
    if data is not None:
        check_finite(data, t.dtype.name, f"{op.name} scales {list(t.shape)}", ctx.where(op))


# --- recording ------------------------------------------------------------------------
def _grid(v: Variant, m: int, n: int, rows: int = 4, lanes: int = 0) -> tuple[int, int]:
    """(tiles across N, workgroups) of variant ``v`` for the first ``m`` rows of an
    [M, n] output; ``rows``: a gemv workgroup's; ``lanes``: a cols workgroup's."""
    if v.kind == "dot":
        return 0, -(-m * n // 64)
    if v.kind == "tiled":
        tiles_n = -(-n // TILE)
        return tiles_n, tiles_n * -(-m // TILE)
    if v.kind == "wide":  # one row
        tiles_n = -(-n // (v.cols * (WIDE_LANES // v.lanes)))
        return tiles_n, tiles_n
    if v.kind == "keep":  # one row, v.cols columns per workgroup
        return -(-n // v.cols), -(-n // v.cols)
    if v.kind == "cols":  # workgroups per row: `lanes` lanes of v.cols columns
        tiles_n = -(-n // (v.cols * lanes))
        return tiles_n, m * tiles_n
    return n, n * -(-m // rows)


async def record(ctx, op, v: Variant, bindings, shape: Q4Shape, has_bias: bool, half: bool,
                 scales_f32: bool, epilogue: str = "", split: dict | None = None,
                 rows: int = 4, eps: float | None = None, gate: tuple = (),
                 merge: tuple = ()) -> None:
    """One product of variant ``v`` (bindings: 0 input, 1 packed weight, 2 out, 4 bias,
    5 scales, 6-7 the split outputs, 8 the offsets if any, 9 the norm weight with ``eps``
    (wide and keep forms: the input RMSNorm'ed first) or the gated chain's second input
    with its ``gate`` steps, or the split attention's parts with ``merge``; ``rows``: up to
    this many input rows per gemv workgroup, M at most). Also used by bench/."""
    m, n = shape.m, shape.n
    rows = max(1, min(rows, m, 4))
    browser = ctx.device.info.traits.subgroups
    offsets = any(b == 8 for b, _ in bindings)
    share = cols_share(ctx.device.info.traits)
    shader = kernel(v.kind, epilogue, scales_f32, browser, rows, shape.group % 8 == 0,
                    offsets, eps is not None, v.cols, share, gate, merge)
    lanes = {"dot": 64, "tiled": 64, "wide": WIDE_LANES, "cols": cols_lanes(v, n, share),
             "keep": max(WIDE_LANES, v.lanes)}.get(v.kind, v.lanes)
    constants = {"wg_size": lanes}
    if v.kind == "wide":
        constants.update(span=v.lanes, cols=v.cols)
    if v.kind == "keep":
        constants.update(keep_lanes=v.lanes, keep_cols=v.cols, keep_batch=v.batch,
                         keep_reps=keep_reps(v, shape.k), keep_parts=keep_parts(v))
    pipeline = await ctx.pipeline(shader, constants, "main", half)
    tiles_n, groups = _grid(v, m, n, rows, lanes)
    split = split or dict(n0=n, n1=n, s_stride0=shape.s_stride)
    params = PARAMS.pack(m=m, n=n, k=shape.k, words=shape.words, group=shape.group,
                         has_bias=int(has_bias), tiles_n=tiles_n, tiles=groups,
                         eps=eps or 0.0, **split)
    uniform = ctx.uniform(params, f"{op.name} params")
    ctx.dispatch(op, pipeline, list(bindings) + [(3, uniform)], ctx.grid(groups))


def column_scales(ctx, op, s_id: int, shape: Q4Shape, split: dict | None):
    """A buffer of the scales as [N, groups] (a column's groups side by side) for the wide
    form, whose lanes read one column's consecutive groups: in the file's [groups, N]
    those are N apart, a memory transaction each (measured on the H200 it tripled the
    bytes a product moves). Stacked parts (``split``) become one [N, groups] block. None
    when the scales are no constant."""
    data = ctx.constant_bytes(s_id)
    if data is None:
        return None
    t = ctx.graph.values[s_id]
    out = column_laid(data, t.dtype.itemsize, shape, split)
    return ctx.constant_buffer(out, t.dtype, f"{ctx.where(op)} scales by column")


def column_laid(data, itemsize: int, shape: Q4Shape, split: dict | None) -> bytes:
    """Scale-laid values (``data``, ``itemsize`` bytes each) as [N, groups]."""
    groups, n = shape.k // shape.group, shape.n
    split = split or dict(n0=n, n1=n, s_stride0=shape.s_stride)
    starts = (0, split["n0"], split["n1"])
    parts = [(start, end, split.get(f"s_stride{i}", 0), split.get(f"s_off{i}", 0))
             for i, (start, end) in enumerate(zip(starts, starts[1:] + (n,))) if end > start]
    code = "H" if itemsize == 2 else "I"  # the bits moved as they are
    src = array(code, bytes(data))
    out = array(code, bytes(itemsize * n * groups))
    for start, end, stride, off in parts:
        for g in range(groups):
            row = off + g * stride
            out[start * groups + g:end * groups:groups] = src[row:row + end - start]
    return out.tobytes()


async def product(ctx, op, bindings, shape: Q4Shape, has_bias: bool, out_id: int,
                  out_n: int, s_id: int, epilogue: str = "", split: dict | None = None,
                  offsets=None, prologue=None):
    """The chosen form (and, for a dynamic row count, decode's twin: ops/matmul.py's
    ``product`` does the same) of one q4 product; ``out_id``, ``out_n`` columns wide, is
    the output whose actual size the dispatches follow; ``offsets``: scale_laid_offsets'
    (buffer, values) when the groups have offsets. ``prologue`` (a matmul.InputPrologue:
    ops/linear_q4_norm.py's norm, ops/linear_q4_gated.py's chain): the input is the folded
    op's output; the one-row forms (wide, keep) read its inputs and compute it themselves,
    the others read the input that ``prologue.cover`` records the op's own dispatch for
    (run only where more rows are actual than those forms take)."""
    if offsets is not None:
        bindings = list(bindings) + [(8, offsets[0])]
    m, n, k = shape.m, shape.n, shape.k
    if m * n == 0:
        return
    if prologue is None:  # a split attention's merge left to this linear (attention_merge)
        prologue = ctx.merges.pop(dict(bindings).get(0), None)
    half = ctx.half(out_id)
    scales_f32 = half and not ctx.half(s_id)
    constant = ctx.constant_bytes(s_id) is not None
    v = VARIANTS.pick(ctx, op, m=m, n=n, k=k, half=half, group=shape.group,
                      constant_scales=constant)
    forms = [(m, v)]
    if m > 1 and ctx.dyn is not None and ctx.dyn.is_dynamic(ctx.graph_key, out_id) \
            and VARIANTS.forced(ctx.options) is None:
        forms = row_forms(ctx.device.info.traits, m, n, k, v, half, shape.group, constant)
        if forms[-1][0] > 1 and forms[-1][1].kind.startswith("gemv"):
            forms.append((1, forms[-1][1]))  # decode: one row per workgroup
    if len(forms) > 1:
        ctx.note_kernel(op, twin=", ".join(f.name for _, f in forms[1:]))
    # The gemv forms take a gated chain too (InputPrologue.allowed: not by the CPU rule)
    gemv_gate = prologue is not None and "gate" in prologue.record \
        and prologue.allowed(forced=VARIANTS.forced(ctx.options) is not None)
    takes = [prologue is not None and (f.kind in WIDE_KINDS or gemv_gate and takes_gate(
        f.kind, shape.group % 8 == 0))
        and _workgroup_bytes(f) + prologue.workgroup_bytes
        <= ctx.device.info.traits.workgroup_storage for _, f in forms]
    if prologue is not None:
        await prologue.settle(op, forms, takes)
    by_column = offsets_by_column = None
    for i, (top, form) in enumerate(forms):
        low = forms[i + 1][0] if i + 1 < len(forms) else 0
        binds = bindings
        if form.kind in WIDE_KINDS:
            by_column = by_column or column_scales(ctx, op, s_id, shape, split)
            if offsets is not None and offsets_by_column is None:
                laid = column_laid(offsets[1], 4, shape, split)
                offsets_by_column = ctx.resources.buffer(max(4, len(laid)),
                                                         f"{ctx.where(op)} offsets by column")
                ctx.device.write_buffer(offsets_by_column, laid)
            binds = [(b, by_column if b == 5 else offsets_by_column if b == 8 else v)
                     for b, v in bindings]
        if takes[i]:
            binds = prologue.bind(binds, 9)
        rows = max(1, min(4, top, m))  # a gemv workgroup's rows: this form's at most
        await record(ctx, op, form, binds, shape, has_bias, half, scales_f32, epilogue,
                     split, rows, **(prologue.record if takes[i] else {}))
        lanes = cols_lanes(form, n, cols_share(ctx.device.info.traits))
        follow_actual_size(
            ctx, out_id, lambda e, f=form, low=low, top=top, rows=rows, lanes=lanes:
            _grid(f, -(-e // out_n), n, rows, lanes)[1] if low < -(-e // out_n) <= top else 0,
            alternative=i > 0)


def _workgroup_bytes(v: Variant) -> int:
    """Workgroup memory of a one-row form (shaders/linear_q4_parts.wgsl wide, keep), or
    the most a gemv form's sums take (its lanes' vec4s)."""
    if v.kind == "wide":
        return 16 * 32
    if v.kind == "keep":
        return 16 * max(WIDE_LANES, v.lanes) + 4 * keep_parts(v)
    return 16 * max(v.lanes, 1)


def choices(graph, op) -> dict[str, str]:
    """The variant each typical adapter would run for this op (shown by inspect)."""
    try:
        if op.name == QCS4W:
            n, k = qcs4w_dims(graph.values, op.args)
            group = k  # one group spans K
        else:
            group = graph.values[op.args[3]].value
            n, k = q4gsw_shape(graph.values, op.args, group).n, graph.values[op.args[0]].shape[-1]
        m = prod(graph.values[op.args[0]].shape[:-1])
    except (FormatError, UnsupportedError, AttributeError, IndexError, TypeError):
        return {}  # malformed op: inspect shows it, the build refuses it
    return VARIANTS.typical(m=m, n=n, k=k, group=group) if m * n * k else {}


# --- CPU references -------------------------------------------------------------------
def _dot_rows(x, k: int, n: int, weight_at, bias) -> list:
    """out[r, j] = sum_k x[r, k] * weight_at(j, k) (+ bias[j]), in float64."""
    rows = [[weight_at(j, kk) for kk in range(k)] for j in range(n)]
    out = []
    for start in range(0, len(x.values), k):
        xs = x.values[start:start + k]
        out += [math.fsum(a * b for a, b in zip(xs, row)) + (bias[j] if bias else 0.0)
                for j, row in enumerate(rows)]
    return out


def reference_q4gsw(read, values, args, name: str = Q4GSW):
    group = values[args[3]].value
    shape = q4gsw_shape(values, args, group, name)
    _check_out(values, args[0], args[-1], shape.n, name)
    x, w, s = read(args[0]), read(args[1]).values, read(args[2]).values
    bias = read(args[4]).values if _check_bias(values, args[4], shape.n, name) else None
    _reference_finite(s, name)
    offsets = None
    if name == OFFSETS:
        offset_values(values, args[5], shape.n, shape.k // group, name)
        offsets = read(args[5]).values
        _reference_finite(offsets, name)
    width, groups = 4 * shape.words, shape.k // group

    def weight_at(j, kk):
        byte = w[j * width + kk // 2] & 255
        q = ((byte >> 4) if kk % 2 else (byte & 15)) - 8
        value = q * s[(kk // group) * shape.s_stride + j]
        return value + offsets[j * groups + kk // group] if offsets else value
    return _dot_rows(x, shape.k, shape.n, weight_at, bias)


def reference_offsets(read, values, args):
    return reference_q4gsw(read, values, args, OFFSETS)


def reference_qcs4w(read, values, args):
    n, k = qcs4w_dims(values, args)
    _check_out(values, args[0], args[-1], n, QCS4W)
    x, w, s = read(args[0]), read(args[1]).values, read(args[2]).values
    _reference_finite(s, QCS4W)
    width = k // 2

    def weight_at(j, kk):
        byte = w[j * width + kk // 2] & 255
        return (((byte & 15) if kk % 2 else (byte >> 4)) - 8) * s[j]
    return _dot_rows(x, k, n, weight_at, None)


def reference_fused(read, values, args, outs=None):
    shape, widths, strides, offsets = fused_layout(values, args, outs=outs)
    x, w, s = read(args[0]), read(args[1]).values, read(args[2]).values
    bias = read(args[4]).values if _check_bias(values, args[4], shape.n, FUSED) else None
    _reference_finite(s, FUSED)
    width, group, parts, start = 4 * shape.words, shape.group, [], 0
    groups = shape.k // group
    part_offsets = fused_offsets(values, args, len(widths)) or [None] * len(widths)
    for n, stride, off, o_id in zip(widths, strides, offsets, part_offsets):
        o = None
        if o_id is not None:
            offset_values(values, o_id, n, groups, FUSED)
            o = read(o_id).values
            _reference_finite(o, FUSED)

        def weight_at(j, kk, start=start, stride=stride, off=off, o=o):
            byte = w[(start + j) * width + kk // 2] & 255
            q = ((byte >> 4) if kk % 2 else (byte & 15)) - 8
            value = q * s[off + (kk // group) * stride + j]
            return value + o[j * groups + kk // group] if o else value
        part_bias = bias[start:start + n] if bias else None
        parts.append(_dot_rows(x, shape.k, n, weight_at, part_bias))
        start += n
    return parts


def _reference_finite(scales, name: str) -> None:
    bad = next((v for v in scales if not math.isfinite(v)), None)
    if bad is not None:
        raise FormatError(f"{name}: a scale is {bad} (scales must be finite)")


def sizes_fused(op, shape, integer, values):
    lead = tuple(shape(op.args[0])[:-1])
    return {o: lead + (values[o].shape[-1],) for o in fused_outputs(values, op.args[7])}


define(Q4GSW, build_q4gsw, reference_q4gsw, 6, half=True, choices=choices, sizes=sizes.linear)
define(QCS4W, build_qcs4w, reference_qcs4w, 4, half=True, choices=choices, sizes=sizes.linear)
define(OFFSETS, build_offsets, reference_offsets, 7, half=True, choices=choices,
       sizes=sizes.linear)
define(FUSED, build_fused, reference_fused, 8, half=True, sizes=sizes_fused)
