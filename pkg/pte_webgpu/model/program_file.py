"""What a ``.pte`` holds, as plain dataclasses: the extended header, segments, execution
plans (values, instructions, delegates) and the program file that owns them. formats/pte.py
reads bytes into these; the runtime, the reference and the app read them."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import FormatError
from . import dtypes

VULKAN_BACKEND_ID = "VulkanBackend"


@dataclass(frozen=True)
class ExtendedHeader:
    header_length: int
    program_size: int
    segment_base_offset: int
    segment_data_size: int


@dataclass(frozen=True)
class Segment:
    offset: int  # relative to the segment base
    size: int
    file_offset: int  # absolute


@dataclass(frozen=True)
class PlanTensor:
    """A tensor EValue of an execution plan (host-side, as ExecuTorch describes it)."""

    scalar_type: int
    dtype: dtypes.DType | None  # None for types this package has no name for
    sizes: tuple[int, ...]
    dim_order: tuple[int, ...]
    data_buffer_idx: int
    memory_id: int | None  # None: not memory-planned
    memory_offset: int
    shape_dynamism: int
    fully_qualified_name: str = ""
    external: bool = False
    kind = "tensor"

    @property
    def numel(self) -> int:
        return dtypes.numel(self.sizes)


@dataclass(frozen=True)
class KernelCall:
    op_index: int
    args: tuple[int, ...]
    kind = "kernel"


@dataclass(frozen=True)
class DelegateCall:
    delegate_index: int
    args: tuple[int, ...]
    kind = "delegate"


@dataclass(frozen=True)
class MoveCall:
    move_from: int
    move_to: int
    kind = "move"


@dataclass(frozen=True)
class JumpFalseCall:
    cond_value_index: int
    destination_instruction: int
    kind = "jump_false"


@dataclass(frozen=True)
class FreeCall:
    value_index: int
    kind = "free"


Instruction = KernelCall | DelegateCall | MoveCall | JumpFalseCall | FreeCall


@dataclass
class BackendDelegate:
    id: str
    location: str  # "inline" or "segment"
    index: int
    compile_specs: dict[str, bytes]
    blob: memoryview
    graph: object = None  # VulkanDelegate, filled by formats.open_program


@dataclass
class ExecutionPlan:
    name: str
    values: list
    inputs: list[int]
    outputs: list[int]
    instructions: list[Instruction]
    operators: list[tuple[str, str]]
    delegates: list[BackendDelegate]
    non_const_buffer_sizes: list[int]


@dataclass
class ProgramFile:
    data: memoryview
    header: ExtendedHeader | None
    version: int
    segments: list[Segment]
    named_data: dict[str, int]  # key -> segment index
    plans: list[ExecutionPlan] = field(default_factory=list)
    named: object = None  # constants.NamedData, set by formats.open_program
    constant_segment: int | None = None  # segment holding plan constant tensors
    constant_offsets: tuple[int, ...] = ()  # by Tensor.data_buffer_idx

    def plan(self, name: str) -> ExecutionPlan:
        for p in self.plans:
            if p.name == name:
                return p
        raise KeyError(name)

    def segment_bytes(self, index: int) -> memoryview:
        seg = self.segments[index]
        return self.data[seg.file_offset:seg.file_offset + seg.size]

    def constant_tensor_bytes(self, tensor: PlanTensor, nbytes: int, where: str) -> memoryview:
        """Bytes of a plan constant (``data_buffer_idx > 0``) in the constant segment."""
        from ..errors import DataTooSmallError

        idx = tensor.data_buffer_idx
        if self.constant_segment is None or not 0 < idx < len(self.constant_offsets):
            raise FormatError(f"{where}: data_buffer_idx {idx} has no constant-segment offset "
                              f"({len(self.constant_offsets)} offsets)")
        data = self.segment_bytes(self.constant_segment)[self.constant_offsets[idx]:]
        if len(data) < nbytes:
            raise DataTooSmallError(f"{where} in the constant segment", nbytes, len(data))
        return data[:nbytes]

    def plan_constant_bytes(self, tensor: PlanTensor, where: str) -> memoryview:
        """Bytes of a plan constant: external (named data, a .ptd first; needs
        ``self.named``, set by formats.open_program) or in the constant segment."""
        from ..errors import DataTooSmallError

        nbytes = tensor.numel * tensor.dtype.itemsize
        if not tensor.external:
            return self.constant_tensor_bytes(tensor, nbytes, where)
        data, source = self.named.lookup(tensor.fully_qualified_name)
        if len(data) < nbytes:
            raise DataTooSmallError(f"{where}: named data {tensor.fully_qualified_name!r} in "
                                    f"{source}", nbytes, len(data))
        return data[:nbytes]

    def named_bytes(self, key: str) -> memoryview | None:
        index = self.named_data.get(key)
        return None if index is None else self.segment_bytes(index)
