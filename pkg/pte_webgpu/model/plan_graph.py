"""A plan seen as a graph (so non-delegated kernels reuse the op library), and the
instruction-chain facts both the GPU runtime and the CPU reference need.

Plan tensors become TensorValue (dedicated buffers, never pooled); kernel names
map from the out-variant schema to the op name the registry uses:
``aten::add`` + ``Scalar_out`` -> ``aten.add.Scalar``; ``out`` -> ``default``.
"""

from __future__ import annotations

from ..errors import FormatError, UnsupportedError
from .graph import Graph, ListValue, OpCall, Scalar, TensorValue
from .program_file import VULKAN_BACKEND_ID, JumpFalseCall, PlanTensor


def plan_as_graph(plan) -> Graph:
    values = [TensorValue(v.dtype, tuple(v.sizes)) if isinstance(v, PlanTensor) else
              _int_list(plan.values, v) for v in plan.values]
    return Graph(values, [], list(plan.inputs), list(plan.outputs), [])


def _int_list(values, v):
    """A plan's IntList holds the indices of its Int values (ExecuTorch boxes them so an
    item may be a SymInt); the graph's holds the ints, as a Vulkan graph's does. A list
    naming anything but an Int stays as it is."""
    if not (isinstance(v, ListValue) and v.kind == "int_list"):
        return v
    items = []
    for i in v.items:
        item = values[i] if 0 <= i < len(values) else None
        if not (isinstance(item, Scalar) and item.kind == "int"):
            return v
        items.append(int(item.value))
    return ListValue("int_list", tuple(items))


def kernel_op_name(name: str, overload: str) -> str:
    base = overload[:-len("_out")] if overload.endswith("_out") else overload
    if base in ("out", ""):
        base = "default"
    return f"{name.replace('::', '.')}.{base}"


def kernel_op(plan, call) -> OpCall:
    """The OpCall a KernelCall stands for: out-variant args minus the returned alias."""
    name, overload = plan.operators[call.op_index]
    args = call.args
    # Out variants append the returned tensor again after ``out``: drop the repeat.
    if len(args) >= 2 and args[-1] == args[-2]:
        args = args[:-1]
    return OpCall(kernel_op_name(name, overload), tuple(args))


def linear_chain(plan):
    """(index, instruction) in execution order; JumpFalse on a constant Bool resolved."""
    pc, seen = 0, set()
    while pc < len(plan.instructions):
        ins = plan.instructions[pc]
        if isinstance(ins, JumpFalseCall):
            cond = plan.values[ins.cond_value_index]
            if not (isinstance(cond, Scalar) and cond.kind == "bool"):
                raise UnsupportedError(f"instruction {pc} of {plan.name!r} jumps on value "
                                       f"{ins.cond_value_index}, which is computed at run "
                                       "time; only constant conditions are supported")
            if pc in seen:
                raise UnsupportedError(f"instruction {pc} of {plan.name!r} loops")
            seen.add(pc)
            pc = pc + 1 if cond.value else ins.destination_instruction
            continue
        yield pc, ins
        pc += 1


def delegate_of(plan, index: int, call):
    """The VulkanDelegate a DelegateCall runs, once its backend and arity are checked."""
    delegate = plan.delegates[call.delegate_index]
    label = f"instruction {index} delegate {call.delegate_index}"
    if delegate.id != VULKAN_BACKEND_ID or delegate.graph is None:
        raise UnsupportedError(f"{label}: backend {delegate.id!r} is not supported "
                               f"(only {VULKAN_BACKEND_ID})")
    graph = delegate.graph.graph
    if len(call.args) != len(graph.input_ids) + len(graph.output_ids):
        raise FormatError(f"{label}: {len(call.args)} arguments for a graph with "
                          f"{len(graph.input_ids)} inputs and {len(graph.output_ids)} outputs")
    return delegate.graph
