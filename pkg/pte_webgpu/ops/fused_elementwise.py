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


def chain_steps(program) -> list[tuple[int, int, int, int]]:
    items = list(program)
    return [tuple(items[i:i + 4]) for i in range(0, len(items), 4)]


def _chain_wgsl(n_inputs: int, steps) -> str:
    """Each step's function, then ``chain_item`` (shaders/generated.wgsl's chain_*)."""
    fns = []
    lines = [fill("generated", "chain_load", reg=i, input="x" if i == 0 else f"x{i}")
             for i in range(n_inputs)]
    for j, (kind, row, a, b) in enumerate(steps):
        reg = n_inputs + j
        if kind == 0:
            fns.append(fill("generated", "chain_unary", j=j, expr=UNARY_TABLE[row].wgsl))
            lines.append(fill("generated", "chain_unary_call", reg=reg, j=j, a=a))
        else:  # alpha == 1 (runtime/fusion.py checks): x + 1 * y is x + y exactly
            expr = BINARY[row].wgsl.replace("params.alpha", "1.0")
            fns.append(fill("generated", "chain_binary", j=j, expr=expr))
            lines.append(fill("generated", "chain_binary_call", reg=reg, j=j, a=a, b=b))
    return "".join(fns) + fill("generated", "chain_item", lines="".join(lines),
                               last=n_inputs + len(steps) - 1)


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


def _chain_args(ctx, op):
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
    ins, steps, out_id = _chain_args(ctx, op)
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
    ctx.note_kernel(op, fused=f"{len(steps)} element-wise ops")
    ctx.dispatch(op, pipeline, binds + [(len(ins) + 1, ctx.uniform(params, f"{op.name} params"))],
                 ctx.grid(-(-out.numel // wg)))
    follow_actual_size(ctx, out_id, wg)


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
