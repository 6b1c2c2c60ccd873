"""What a method takes and gives, read from the parsed program without a GPU
(``Program.metadata(name)``), shaped like ExecuTorch's ``MethodMeta``/``TensorInfo``:
``num_inputs()``, ``input_tensor_meta(i)``, ``sizes()``, ... plus plain fields.
"""

from __future__ import annotations

from dataclasses import dataclass

from .program_file import ExecutionPlan, PlanTensor


@dataclass(frozen=True)
class TensorInfo:
    """One plan input or output. ``kind`` is "tensor" for tensors; other values (an
    int, a list, ...) carry only their kind."""

    kind: str
    shape: tuple[int, ...] | None = None
    dtype: str | None = None  # numpy-style name, e.g. "float32"; None when unnamed
    scalar_type: int | None = None  # ExecuTorch's ScalarType number
    dim_order: tuple[int, ...] | None = None
    nbytes: int = 0
    memory_planned: bool = False

    def sizes(self) -> tuple[int, ...]:
        return self.shape

    def is_memory_planned(self) -> bool:
        return self.memory_planned


@dataclass(frozen=True)
class DelegateInfo:
    backend: str  # e.g. "VulkanBackend"
    ops: tuple[str, ...]  # its graph's op names, in order (empty when not parsed)


@dataclass(frozen=True)
class MethodMeta:
    name: str
    inputs: tuple[TensorInfo, ...]
    outputs: tuple[TensorInfo, ...]
    delegates: tuple[DelegateInfo, ...]
    operators: tuple[str, ...]  # non-delegated kernels, e.g. "aten::add.Scalar_out"
    instruction_count: int

    def num_inputs(self) -> int:
        return len(self.inputs)

    def num_outputs(self) -> int:
        return len(self.outputs)

    def input_tensor_meta(self, index: int) -> TensorInfo:
        return _at(self.inputs, index, "input")

    def output_tensor_meta(self, index: int) -> TensorInfo:
        return _at(self.outputs, index, "output")


def method_meta(plan: ExecutionPlan) -> MethodMeta:
    return MethodMeta(
        plan.name,
        tuple(_value_info(plan.values[v]) for v in plan.inputs),
        tuple(_value_info(plan.values[v]) for v in plan.outputs),
        tuple(DelegateInfo(d.id, tuple(op.name for op in d.graph.graph.ops) if d.graph else ())
              for d in plan.delegates),
        tuple(f"{name}.{overload}" if overload else name for name, overload in plan.operators),
        len(plan.instructions))


def _value_info(value) -> TensorInfo:
    if not isinstance(value, PlanTensor):
        return TensorInfo(getattr(value, "kind", type(value).__name__))
    return TensorInfo("tensor", tuple(value.sizes), value.dtype.name if value.dtype else None,
                      value.scalar_type, tuple(value.dim_order),
                      value.numel * value.dtype.itemsize if value.dtype else 0,
                      value.memory_id is not None)


def _at(items, index: int, what: str):
    if not 0 <= index < len(items):
        raise IndexError(f"{what} index {index} out of range [0, {len(items)})")
    return items[index]
