"""Whether a program can keep its float16 tensors as f16 on the GPU (``Storage.half``).

It can when every op that touches a float16 tensor has an f16 kernel (registered
with ``half=True``) and sees one floating dtype only (integer operands, such as
embedding indices, do not count), and no delegate call changes a tensor's dtype
at its boundary (e.g. ``force_fp16``: float32 plan, float16 graph; int64 plan
values at int32 graph values are the same int32 storage either way).
The adapter's side (``shader-f16``) is checked by the Program.
"""

from __future__ import annotations

from ..model.dtypes import FLOAT16, INT32, INT64
from ..model.graph import ListValue, TensorValue
from ..model.plan_graph import kernel_op, plan_as_graph
from ..model.program_file import DelegateCall, KernelCall
from ..ops import registry


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
                if any(_boundary_dtype(graph.values[g]) is not
                       _boundary_dtype(plan_graph.values[p]) for g, p in boundary):
                    return False
                if not all(_op_can_use_half(graph, op) for op in graph.ops):
                    return False
    return True


def _boundary_dtype(value):
    dtype = getattr(value, "dtype", None)
    return INT32 if dtype is INT64 else dtype  # both held as int32 (downcast_64_bit)


def _op_can_use_half(graph, op) -> bool:
    kinds = set()
    for vid in op.args:
        value = graph.values[vid]
        items = value.items if isinstance(value, ListValue) and value.kind == "value_list" \
            else (vid,)
        kinds |= {graph.values[i].dtype for i in items
                  if isinstance(graph.values[i], TensorValue)
                  and getattr(graph.values[i].dtype, "name", "float").startswith(
                      ("float", "bfloat"))}
    return FLOAT16 not in kinds or (len(kinds) == 1 and registry.has_half(op.name))
