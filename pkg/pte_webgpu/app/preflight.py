"""What a run checks on the host before any GPU or browser starts: the program parses,
every constant resolves (a missing .ptd is named with the flag that supplies it), and
the inputs match the method (the rule of inputs.py). Raises the PteError family."""

from __future__ import annotations

from .. import formats
from ..errors import InputError, MissingDataError
from ..formats import npy
from ..model.graph import TensorValue
from . import npz_inputs as inputs
from . import steps


def check_run(pte: bytes, data_files, inputs_npz: bytes | None, *, method: str = "forward",
              cast: bool = False, inputs_name: str = "the inputs file",
              data_hint: str = "--data FILE.ptd") -> list[str]:
    """Everything but the GPU work of a run; returns the input names it will use."""
    program = formats.open_program(pte, data_files)
    try:
        plan = program.plan(method)
    except KeyError:
        raise InputError(f"no method {method!r}; the program has "
                         f"{[p.name for p in program.plans]}") from None
    try:
        check_constants(program, plan)
    except MissingDataError as e:
        e.args = (f"{e} (give the .ptd file that holds it with {data_hint})",)
        raise
    values = [plan.values[v] for v in plan.inputs]
    if not all(getattr(v, "kind", None) == "tensor" and v.dtype is not None for v in values):
        return []  # non-tensor or unnamed-dtype inputs: the runtime explains those
    specs = [(tuple(v.sizes), v.dtype.name) for v in values]
    arrays = npy.read_npz(inputs_npz, inputs_name) if inputs_npz is not None else {}
    if inputs_npz is None:
        if specs:
            raise InputError(f"the method takes {len(specs)} inputs ({inputs.spec_text(specs)}); "
                             "give them as an .npz with --inputs")
        return []
    mode, calls = steps.plan_calls(arrays)
    if mode != "single":  # stepK_inJ / seq_inJ: each call is checked when it runs
        return [n for n in arrays if not steps.is_output_name(n)]
    return inputs.match_inputs(specs, arrays, cast=cast, source=inputs_name)[1]


def check_constants(program, plan) -> None:
    """Resolve every constant the plan's Vulkan delegates and external tensors use."""
    for delegate in plan.delegates:
        vk = delegate.graph
        if vk is None:
            continue
        users = {}
        for v in vk.graph.values:
            if isinstance(v, TensorValue) and v.constant_id >= 0:
                users.setdefault(v.constant_id, v)
        for ref in vk.graph.constants:
            tensor = users.get(ref.index)
            formats.resolve(ref, tensor.nbytes if tensor else ref.length, program.named,
                            vk.constant_bytes)
    for v in plan.values:
        if getattr(v, "kind", None) == "tensor" and getattr(v, "external", False):
            program.named.lookup(v.fully_qualified_name)
