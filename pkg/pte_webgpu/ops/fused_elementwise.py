"""The fused element-wise chain: same-shape unary and binary table rows (ops/unary.py,
ops/binary.py) in one kernel, shaders/unary.wgsl with the chain's steps generated.

``pte_webgpu.fused_elementwise [in_0 .. in_n-1, program: int_list, out]``
(runtime/fusion.py writes it): each step of ``program`` is 4 ints (kind 0 unary | 1
binary, table row, operand a, operand b); operands number the inputs 0..n-1, then step
j's result n + j; the last step's result is ``out``. Every step's result is rounded to
the stored type (elem) as the unfused op's output tensor would be, so the values are
those of the ops run one by one (e.g. silu as sigmoid then mul, times up_proj).
"""

from __future__ import annotations

import math

from ..errors import FormatError
from ..shaders.compose import Binding, Entry, Kernel, fill
from . import cpu_reference as cpu
from . import sizes
from .binary import TABLE as BINARY
from .common import elementwise_workgroup
from .exec_ints import follow_actual_size
from .registry import define
from .unary import KERNEL as UNARY
from .unary import PARAMS
from .unary import TABLE as UNARY_TABLE

FUSED = "pte_webgpu.fused_elementwise"
MAX_INPUTS = 7  # storage bindings: the inputs and out


def _row(table, name: str) -> int:
    return next(i for i, r in enumerate(table) if r.name == name)


_SIGMOID, _MUL = _row(UNARY_TABLE, "aten.sigmoid.default"), _row(BINARY, "aten.mul.Tensor")
GATED_MATH = ("sigmoid",)  # the f32_math sections a gated chain's steps call


def is_swiglu(n_inputs: int, steps) -> bool:
    """Whether a chain is SwiGLU as exported, silu(gate) * up as sigmoid then two muls:
    s = sigmoid(r0), t = r0 * s, r1 * t (either operand order of each mul): the only
    chain a matmul's gated prologue takes (ops/gated_linear.py; its math: GATED_MATH)."""
    if n_inputs != 2 or len(steps) != 3:
        return False
    (k0, r0, a0, _), (k1, r1, a1, b1), (k2, r2, a2, b2) = steps
    return (k0, r0, a0) == (0, _SIGMOID, 0) and (k1, r1, k2, r2) == (1, _MUL, 1, _MUL) \
        and {a1, b1} == {0, 2} and {a2, b2} == {1, 3}


def chain_steps(program) -> list[tuple[int, int, int, int]]:
    items = list(program)
    return [tuple(items[i:i + 4]) for i in range(0, len(items), 4)]


def chain_function(n_inputs: int, steps) -> str:
    """Each step's function, then ``chain_value(r0, .., r<n-1>)``, the chain's value of
    one element (shaders/generated.wgsl's chain_*): what the chain's kernel stores, and
    what a matmul's gated-input prologue computes as it loads (ops/gated_linear.py)."""
    fns, lines = [], []
    for j, (kind, row, a, b) in enumerate(steps):
        reg = n_inputs + j
        if kind == 0:
            fns.append(fill("generated", "chain_unary", j=j, expr=UNARY_TABLE[row].wgsl))
            lines.append(fill("generated", "chain_unary_call", reg=reg, j=j, a=a))
        else:  # alpha == 1 (runtime/fusion.py checks): x + 1 * y is x + y exactly
            expr = BINARY[row].wgsl.replace("params.alpha", "1.0")
            fns.append(fill("generated", "chain_binary", j=j, expr=expr))
            lines.append(fill("generated", "chain_binary_call", reg=reg, j=j, a=a, b=b))
    inputs = ", ".join(f"r{i}: f32" for i in range(n_inputs))
    return "".join(fns) + fill("generated", "chain_value", inputs=inputs, lines="".join(lines),
                               last=n_inputs + len(steps) - 1)


def _chain_wgsl(n_inputs: int, steps) -> str:
    """``chain_function``, then ``chain_item``: the inputs loaded, the value stored."""
    loads = "".join(fill("generated", "chain_load", reg=i, input="x" if i == 0 else f"x{i}")
                    for i in range(n_inputs))
    regs = ", ".join(f"r{i}" for i in range(n_inputs))
    return chain_function(n_inputs, steps) + fill("generated", "chain_item", loads=loads,
                                                  regs=regs)


_CHAINS: dict[tuple, Kernel] = {}


def chain_kernel(n_inputs: int, steps) -> Kernel:
    """The kernel of one program (one per distinct program: a layer's repeat shares it)."""
    key = (n_inputs, tuple(steps))
    if key not in _CHAINS:
        code = "_".join("u" if k == 0 else "b" for k, *_ in steps)
        bindings = (Binding(0, "x"), Binding(1, "y", "read_write")) + tuple(
            Binding(1 + i, f"x{i}") for i in range(1, n_inputs))
        _CHAINS[key] = Kernel(
            "unary", bindings, PARAMS, snippets=("bits", "nan_minmax"),
            entries=(Entry("chain", "chain_item", "params.numel"),), library=("f32_math",),
            generated=UNARY.generated + _chain_wgsl(n_inputs, steps),
            name=f"unary_chain{len(_CHAINS)}_{n_inputs}in_{code}")
    return _CHAINS[key]


def chain_args(ctx, op):
    """(input ids, steps, output id) of a chain op, checked."""
    if len(op.args) < 3:
        raise FormatError(f"{op.name}: inputs, a program and an output, found "
                          f"{len(op.args)} arguments", field=ctx.where(op))
    *ins, program_id, out_id = op.args
    program = ctx.graph.values[program_id]
    steps = chain_steps(getattr(program, "items", ()))
    if any(len(st) != 4 for st in steps):
        steps = []
    regs = len(ins)
    ok = 1 <= len(ins) < MAX_INPUTS and steps
    for kind, row, a, b in steps if ok else ():
        ok = ok and (kind, row) in _ROWS and 0 <= a < regs and (kind == 0 or 0 <= b < regs)
        regs += 1
    if not ok:
        raise FormatError(f"{op.name}: program {list(getattr(program, 'items', ()))} is not "
                          f"steps of (kind, row, a, b) over {len(ins)} inputs",
                          field=ctx.where(op))
    return ins, steps, out_id


_ROWS = {(0, r) for r in range(len(UNARY_TABLE))} | {(1, r) for r in range(len(BINARY))}


async def build_chain(ctx, op):
    ins, steps, out_id = chain_args(ctx, op)
    ctx.note_kernel(op, fused=f"{len(steps)} element-wise ops")
    await record_chain(ctx, op, ins, steps, out_id)


async def record_chain(ctx, op, ins, steps, out_id: int, rows_above: int = 0) -> None:
    """The chain's dispatch over value ids ``ins`` into ``out_id``; a dynamic output: run
    only where more than ``rows_above`` rows (of its last dim) are actual (fewer are
    computed by the linear reading it: ops/gated_linear.py)."""
    out = ctx.float_tensor(out_id, op)
    for vid in ins:
        if tuple(ctx.float_tensor(vid, op).shape) != tuple(out.shape):
            raise FormatError(f"{op.name}: input {vid} {list(ctx.tensor(vid, op).shape)} and "
                              f"output {list(out.shape)} differ", field=ctx.where(op))
    if out.numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(chain_kernel(len(ins), steps), {"wg_size": wg}, "chain",
                                  half=ctx.half(out_id))
    params = PARAMS.pack(numel=out.numel, inf=math.inf, nan=math.nan)
    binds = [(0, ins[0]), (1, out_id)] + [(1 + i, vid) for i, vid in enumerate(ins[1:], 1)]
    ctx.dispatch(op, pipeline, binds + [(len(ins) + 1, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-out.numel // wg)))
    width = out.shape[-1] if out.shape else 1
    follow_actual_size(ctx, out_id, lambda n: -(-n // wg) if -(-n // width) > rows_above else 0)


def reference_chain(read, values, args):
    *ins, program_id, out_id = args
    steps = chain_steps(values[program_id].items)
    code = "e" if values[out_id].dtype.name == "float16" else "f"
    regs = [read(vid).values for vid in ins]
    for kind, row, a, b in steps:
        if kind == 0:
            regs.append([cpu.round_one(UNARY_TABLE[row].ref(v, {}), code) for v in regs[a]])
        else:
            regs.append([cpu.round_one(BINARY[row].ref(x, y, 1.0), code)
                         for x, y in zip(regs[a], regs[b])])
    return regs[-1]


define(FUSED, build_chain, reference_chain, None, half=True, sizes=sizes.same_as_first)
