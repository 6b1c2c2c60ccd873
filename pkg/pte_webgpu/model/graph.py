"""The graph model the runtime consumes, independent of any file format.

A delegate's graph is a list of values (tensors, scalars, lists) and a chain
of op calls whose arguments are value ids. Formats build it; ops read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .dtypes import DType, numel


@dataclass(frozen=True, slots=True)
class Null:
    """An absent argument (None, or a dtype/device/layout the exporter dropped)."""

    kind = "null"


@dataclass(frozen=True, slots=True)
class Scalar:
    """kind: "int", "double", "bool", "string" or "symint"."""

    kind: str
    value: int | float | bool | str

    def is_one(self) -> bool:
        """An int or double 1 (an add's alpha that changes nothing)."""
        return self.kind in ("int", "double") and self.value == 1


@dataclass(frozen=True, slots=True)
class ListValue:
    """kind: "int_list", "double_list", "bool_list" or "value_list" (value ids)."""

    kind: str
    items: tuple


@dataclass(frozen=True, slots=True)
class TensorValue:
    """A tensor of a delegate graph.

    ``constant_id`` >= 0 indexes ``Graph.constants``; ``mem_obj_id`` >= 0 names
    a memory object that tensors with the same id share (memory planning).
    """

    dtype: DType
    shape: tuple[int, ...]
    constant_id: int = -1
    mem_obj_id: int = -1
    staging_dtype: DType | None = None
    storage_type: int = 255
    memory_layout: int = 255
    kind = "tensor"

    @property
    def numel(self) -> int:
        return numel(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    @property
    def is_constant(self) -> bool:
        return self.constant_id >= 0


Value = Null | Scalar | ListValue | TensorValue


@dataclass(frozen=True, slots=True)
class ConstantRef:
    """Where a constant's bytes live: inline (``offset``) or by ``named_key``."""

    index: int
    offset: int | None  # byte offset into the delegate's bytes region, None when named
    length: int
    named_key: str | None

    @property
    def source(self) -> str:
        return "inline" if self.offset is not None else "named"


@dataclass(frozen=True, slots=True)
class OpCall:
    name: str
    args: tuple[int, ...]
    node_id: int = 0


@dataclass
class Graph:
    """One delegate graph: values, op chain, inputs/outputs and constant refs."""

    values: list[Value]
    ops: list[OpCall]
    input_ids: list[int]
    output_ids: list[int]
    constants: list[ConstantRef]
    version: str = ""
    meta: dict = field(default_factory=dict)

    def tensor(self, vid: int) -> TensorValue:
        value = self.values[vid]
        assert isinstance(value, TensorValue), (vid, value)
        return value
