"""A plan's values seen as a graph, so non-delegated kernels reuse the op library.

Plan tensors become TensorValue (dedicated buffers, never pooled); kernel names
map from the out-variant schema to the op name the registry uses:
``aten::add`` + ``Scalar_out`` -> ``aten.add.Scalar``; ``out`` -> ``default``.
"""

from __future__ import annotations

from ..formats.pte import PlanTensor
from ..graph import Graph, OpCall, TensorValue


def plan_as_graph(plan) -> Graph:
    values = [TensorValue(v.dtype, tuple(v.sizes)) if isinstance(v, PlanTensor) else v
              for v in plan.values]
    return Graph(values, [], list(plan.inputs), list(plan.outputs), [])


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
