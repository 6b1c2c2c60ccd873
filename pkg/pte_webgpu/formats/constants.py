"""Resolve a delegate constant to its bytes: inline, ``.ptd`` files, PTE named data.

External files are consulted first, then the program's own named data, as
ExecuTorch's runtime does. Results are zero-copy views of the input buffers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import DataTooSmallError, FormatError, MissingDataError
from ..model.graph import ConstantRef
from ..model.program_file import ProgramFile
from .flat_tensor import FlatTensorFile


@dataclass(frozen=True)
class ResolvedConstant:
    data: memoryview  # exactly the bytes the tensor needs
    source: str  # "inline", "pte", or the .ptd file name


class NamedData:
    """Named-data lookup across ``.ptd`` files (first) and the program."""

    def __init__(self, program: ProgramFile | None, data_files: list[FlatTensorFile] = ()):
        self.program = program
        self.data_files = list(data_files)

    def lookup(self, key: str) -> tuple[memoryview, str]:
        for f in self.data_files:
            data = f.get(key)
            if data is not None:
                return data, f.name
        data = self.program.named_bytes(key) if self.program else None
        if data is not None:
            return data, "pte"
        raise MissingDataError(key, [f.name for f in self.data_files] + ["the .pte named data"])


def resolve(ref: ConstantRef, nbytes: int, named: NamedData,
            inline_bytes: memoryview) -> ResolvedConstant:
    """The first ``nbytes`` bytes of constant ``ref``; typed errors when absent or short."""
    if nbytes == 0:
        return ResolvedConstant(memoryview(b""), ref.source)
    if ref.offset is not None:
        end = ref.offset + nbytes
        if end > len(inline_bytes):
            raise DataTooSmallError(
                f"inline constant {ref.index} at offset {ref.offset} of the delegate's "
                f"{len(inline_bytes)}-byte constant region", nbytes,
                max(0, len(inline_bytes) - ref.offset))
        return ResolvedConstant(inline_bytes[ref.offset:end], "inline")
    if ref.named_key is None:
        raise FormatError("constant has neither an inline offset nor a named-data key",
                          field=f"VkGraph.constants[{ref.index}]")
    data, source = named.lookup(ref.named_key)
    if len(data) < nbytes:
        raise DataTooSmallError(f"named data {ref.named_key!r} in {source}", nbytes, len(data))
    return ResolvedConstant(data[:nbytes], source)
