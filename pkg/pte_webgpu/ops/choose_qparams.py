"""``torchao.choose_qparams_affine.default [input, mapping, block_size, target_dtype,
quant_min, quant_max, eps, scale_dtype, zero_point_dtype, keepdim, [scale, zero_point]]``
(choose_qparams.wgsl): the scale and zero point of each block of ``input``, as torchao's
``_choose_qparams_affine`` computes them. ExecuTorch's Vulkan partitioner emits it for the
8-bit dynamic activations of 8da4w linears (block ``[1, ..., 1, K]``: one pair per token,
ASYMMETRIC, int8 -128..127; see docs/quantized-formats.md).

ASYMMETRIC: ``lo = min(min(x), 0)``, ``hi = max(max(x), 0)``, ``scale = max((hi - lo) /
(qmax - qmin), eps)``, ``zero_point = clamp(qmin - round(lo / scale), qmin, qmax)``;
SYMMETRIC: ``scale = max(max(-lo, hi) / ((qmax - qmin) / 2), eps)``, zero point
``(qmax + qmin + 1) // 2``. All in f32, ``round`` half to even; ``eps`` null means
the input dtype's smallest normal. float16 programs (force_fp16) compute in f32 too; the
scale is rounded to its stored type before the zero point is taken from it. A block
here is a run of trailing dims (``block_size`` 1 on the leading dims, the whole dim on
the rest): the forms torchao's per-token and
per-tensor activations use; another is refused naming the op and block.
"""

from __future__ import annotations

import math

from ..errors import FormatError, UnsupportedError
from ..model.graph import ListValue, Null, Scalar
from ..shaders.compose import Binding, Entry, Kernel, Uniform, sections
from .cpu_reference import round_one, to_f32
from .exec_ints import follow_actual_size
from .registry import register

# torchao's eps when none is given: the input dtype's smallest normal
SMALLEST_NORMAL = {"float32": 2.0 ** -126, "float16": 2.0 ** -14}
MAPPINGS = ("ASYMMETRIC", "SYMMETRIC")

PARAMS = Uniform(("rows", "u32"), ("width", "u32"), ("qmin", "i32"), ("qmax", "i32"),
                 ("eps", "f32"), ("symmetric", "u32"), ("f16_scale", "u32"),
                 ("inf", "f32"))
KERNEL = Kernel("choose_qparams", (Binding(0, "x"), Binding(1, "scale", "read_write"),
                                   # int8 zero points: 4 to a word, each set by its row
                                   Binding(2, "zp", "read_write", "atomic<u32>")),
                PARAMS, entries=(Entry("main", "item", "params.rows"),), snippets=("bits",),
                # torch's rounded division; float16 rounding in integers (NVIDIA's compiler
                # folds unpack2x16float(pack2x16float(v)) to v)
                generated=sections("linear_dq8_parts")["div_rn"]
                + sections("f32_math")["round_half"])


def _fail(op_name: str, msg: str, where: str | None = None):
    return FormatError(f"{op_name}: {msg}", field=where)


def parse(values, args, op_name: str, where: str | None = None) -> dict:
    """The op's static arguments checked: mapping, block (as rows x width of ``input``),
    qmin, qmax, eps and the two outputs."""
    x_id, mapping_id, block_id, _dtype, qmin_id, qmax_id, eps_id = args[:7]
    x, mapping, block = values[x_id], values[mapping_id], values[block_id]
    if not (isinstance(mapping, Scalar) and mapping.kind == "string"):
        raise _fail(op_name, f"value {mapping_id} should be the mapping type (a string), "
                    f"found {mapping.kind}", where)
    if mapping.value not in MAPPINGS:
        raise UnsupportedError(f"{op_name}: mapping type {mapping.value!r} is not supported "
                               f"(only {', '.join(MAPPINGS)})" + (f" ({where})" if where else ""))
    if not (isinstance(block, ListValue) and block.kind == "int_list"):
        raise _fail(op_name, f"value {block_id} should be the block size (an IntList), found "
                    f"{block.kind}", where)
    shape, block = tuple(x.shape), [int(b) for b in block.items]
    if len(block) != len(shape):
        raise _fail(op_name, f"block size {block} does not match input {list(shape)}", where)
    # torchao reduces the dims whose block is the whole dim (and not 1), keeps those of 1
    reduced = [i for i, (b, d) in enumerate(zip(block, shape)) if b == d and b != 1]
    first = min(reduced, default=len(shape))
    if any(b != 1 and i not in reduced for i, b in enumerate(block)) or \
            any(i > first and shape[i] > 1 for i in range(len(shape)) if i not in reduced):
        raise UnsupportedError(f"{op_name}: block size {block} of input {list(shape)}: only "
                               "blocks of whole trailing dims (1 on the leading ones) run"
                               + (f" ({where})" if where else ""))
    width = 1
    for i in reduced:
        width *= shape[i]
    qmin, qmax = (_int(values, v, op_name, where) for v in (qmin_id, qmax_id))
    if not -128 <= qmin < qmax <= 255:
        raise UnsupportedError(f"{op_name}: quant range [{qmin}, {qmax}] is not an 8-bit one")
    eps_value = values[eps_id]
    x_dtype = getattr(getattr(x, "dtype", None), "name", "")
    if x_dtype not in SMALLEST_NORMAL:
        raise UnsupportedError(f"{op_name}: input (value {x_id}) is {x_dtype or x.kind}; "
                               "expected float32 or float16")
    eps = SMALLEST_NORMAL[x_dtype] if isinstance(eps_value, Null) else to_f32(float(
        _number(eps_value, eps_id, op_name, where)))
    outs = values[args[-1]]
    if not (isinstance(outs, ListValue) and outs.kind == "value_list" and len(outs.items) == 2):
        raise _fail(op_name, f"value {args[-1]} should list the scale and zero point", where)
    scale_id, zp_id = outs.items
    rows = x.numel // width if width else 0
    for vid, want in ((scale_id, ("float32", "float16")), (zp_id, ("int8", "uint8", "int32"))):
        t = values[vid]
        if getattr(t, "dtype", None) is None or t.dtype.name not in want:
            raise UnsupportedError(f"{op_name}: output value {vid} is "
                                   f"{getattr(getattr(t, 'dtype', None), 'name', t.kind)}; "
                                   f"expected {' or '.join(want)}")
        if t.numel != rows:
            raise _fail(op_name, f"output value {vid} {list(t.shape)} should hold one value "
                        f"per block: {rows} for input {list(shape)} and block {block}", where)
    if values[zp_id].dtype.name != "int8" or qmin < -128 or qmax > 127:
        raise UnsupportedError(f"{op_name}: zero points {values[zp_id].dtype.name} in "
                               f"[{qmin}, {qmax}]: only int8 zero points run")
    return {"rows": rows, "width": width, "reduced": reduced, "qmin": qmin, "qmax": qmax,
            "eps": eps, "symmetric": mapping.value == "SYMMETRIC", "scale": scale_id,
            "zp": zp_id, "block": block,
            "f16_scale": values[scale_id].dtype.name == "float16"}


def _int(values, vid, op_name, where) -> int:
    v = values[vid]
    if isinstance(v, Scalar) and v.kind == "int":
        return int(v.value)
    raise _fail(op_name, f"value {vid} should be an Int, found {v.kind}", where)


def _number(v, vid, op_name, where) -> float:
    if isinstance(v, Scalar) and v.kind in ("int", "double"):
        return v.value
    raise _fail(op_name, f"value {vid} should be eps (a Double or null), found {v.kind}", where)


def qparams_of(row, p: dict) -> tuple[float, int]:
    """(scale, zero point) of one block's f32 values, in f32 as torchao computes them
    (a float16 scale rounded first, as the kernel does)."""
    stored = (lambda v: round_one(v, "e")) if p["f16_scale"] else (lambda v: v)
    lo = min(min(row), 0.0) if row else 0.0
    hi = max(max(row), 0.0) if row else 0.0
    qmin, qmax = p["qmin"], p["qmax"]
    if p["symmetric"]:
        scale = stored(max(to_f32(max(-lo, hi) / to_f32((qmax - qmin) / 2)), p["eps"]))
        return scale, (qmax + qmin + 1) // 2
    scale = stored(max(to_f32(to_f32(hi - lo) / float(qmax - qmin)), p["eps"]))
    zp = qmin - round(to_f32(lo / scale))
    return scale, min(max(zp, qmin), qmax)


def reference(read, values, args):
    p = parse(values, args, "torchao.choose_qparams_affine.default")
    x = read(args[0]).values
    w = p["width"]
    pairs = [qparams_of(x[r * w:(r + 1) * w], p) for r in range(p["rows"])]
    return [[s for s, _ in pairs], [z for _, z in pairs]]


def sizes(op, shape, integer, values):
    """One pair per block: the input's shape less its reduced dims (1 with keepdim)."""
    scale_id, zp_id = values[op.args[-1]].items
    bound, block = values[op.args[0]].shape, values[op.args[2]].items
    keep = isinstance(values[op.args[9]], Scalar) and bool(values[op.args[9]].value)
    out = []
    for i, d in enumerate(shape(op.args[0])):
        if block[i] == bound[i] and block[i] != 1:
            out += [1] if keep else []
        else:
            out.append(d)
    return {scale_id: tuple(out), zp_id: tuple(out)}


@register("torchao.choose_qparams_affine.default", reference=reference, args=11, sizes=sizes,
          half=True)
async def build_choose_qparams(ctx, op):
    args = ctx.args(op, 11)
    ctx.float_tensor(args[0], op)
    p = parse(ctx.graph.values, args, op.name, ctx.where(op))
    half = ctx.half(args[0])
    if ctx.half(p["scale"]) != half:
        raise UnsupportedError(f"{op.name}: input and scale are stored as different float "
                               f"types ({ctx.where(op)})")
    if p["rows"] == 0:
        return
    wg = 64
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, half=half)
    uniform = ctx.uniform(PARAMS.pack(rows=p["rows"], width=p["width"], qmin=p["qmin"],
                                      qmax=p["qmax"], eps=p["eps"],
                                      symmetric=int(p["symmetric"]),
                                      f16_scale=int(p["f16_scale"]), inf=math.inf),
                         f"{op.name} params")
    ctx.dispatch(op, pipeline, [(0, args[0]), (1, p["scale"]), (2, p["zp"]), (3, uniform)],
                 ctx.grid(-(-p["rows"] // wg)))
    follow_actual_size(ctx, p["scale"], wg)
