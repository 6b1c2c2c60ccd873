"""Readers for ExecuTorch files: ``.pte``, the Vulkan delegate blob, ``.ptd``.

``open_program`` is the entry point: it parses the program, every Vulkan
delegate graph and the external data files, and wires up named-data lookup.
Nothing here knows about GPUs.
"""

from __future__ import annotations

import os

from ..errors import PteError
from ..model.program_file import VULKAN_BACKEND_ID, ProgramFile
from .constants import NamedData, ResolvedConstant, resolve
from .flat_tensor import FlatTensorFile, read_flat_tensor
from .pte import read_program
from .vulkan import VulkanDelegate, read_delegate


def open_program(pte, data_files=()) -> ProgramFile:
    """Parse ``pte`` bytes plus ``.ptd`` files given as bytes, paths or (name, bytes) pairs.

    Vulkan delegates get ``delegate.graph`` (a VulkanDelegate); the program
    gets ``program.named`` (a NamedData that looks in the .ptd files first).
    """
    program = read_program(pte)
    files = [read_flat_tensor(data, name) for name, data in _named_files(data_files)]
    for plan in program.plans:
        for delegate in plan.delegates:
            if delegate.id == VULKAN_BACKEND_ID:
                delegate.graph = read_delegate(delegate.blob)
    program.named = NamedData(program, files)
    return program


def _named_files(data_files):
    for i, item in enumerate(data_files):
        if isinstance(item, tuple):
            yield item
        elif isinstance(item, (str, os.PathLike)):
            try:
                with open(item, "rb") as f:
                    data = f.read()
            except OSError as e:
                raise PteError(f"cannot read data file {os.fspath(item)!r}: {e.strerror}") from None
            yield os.path.basename(item), data
        else:
            yield f"data file {i}", item


__all__ = ["FlatTensorFile", "NamedData", "ProgramFile", "ResolvedConstant", "VulkanDelegate",
           "open_program", "read_delegate", "read_flat_tensor", "read_program", "resolve",
           "VULKAN_BACKEND_ID"]
