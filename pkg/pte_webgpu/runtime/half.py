"""Whether a program can keep its float16 tensors as f16 on the GPU (``Storage.half``).

It can when every op that touches a float16 tensor has an f16 kernel (registered
with ``half=True``) and sees one dtype only, and no delegate call changes a
tensor's dtype at its boundary (e.g. ``force_fp16``: float32 plan, float16 graph).
The adapter's side (``shader-f16``) is checked by the Program.
"""

from __future__ import annotations

from ..dtypes import FLOAT16
from ..formats.pte import DelegateCall, KernelCall
from ..graph import ListValue, TensorValue
from ..ops import registry
from .plan_graph import kernel_op, plan_as_graph


def program_can_use_half(file) -> bool:
    for plan in file.plans:
        plan_graph = plan_as_graph(plan)
        for ins in plan.instructions:
            if isinstance(ins, KernelCall):
                if not _op_can_use_half(plan_graph, kernel_op(plan, ins)):
                    return False
            elif isinstance(ins, DelegateCall):
                vk = plan.delegates[ins.delegate_index].graph
                if vk is None:
                    continue  # not runnable at all: the load says so
                graph = vk.graph
                boundary = zip(graph.input_ids + graph.output_ids, ins.args)
                if any(getattr(graph.values[g], "dtype", None) is not
                       getattr(plan_graph.values[p], "dtype", None) for g, p in boundary):
                    return False
                if not all(_op_can_use_half(graph, op) for op in graph.ops):
                    return False
    return True


def _op_can_use_half(graph, op) -> bool:
    kinds = set()
    for vid in op.args:
        value = graph.values[vid]
        items = value.items if isinstance(value, ListValue) and value.kind == "value_list" \
            else (vid,)
        kinds |= {graph.values[i].dtype for i in items
                  if isinstance(graph.values[i], TensorValue)}
    return FLOAT16 not in kinds or (len(kinds) == 1 and registry.has_half(op.name))
