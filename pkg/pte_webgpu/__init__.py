"""pte-webgpu: run ExecuTorch Vulkan-delegated programs on WebGPU from Python."""

from .errors import (
    BudgetError,
    ClosedError,
    DataTooSmallError,
    DeviceLostError,
    FormatError,
    GpuError,
    GpuLimitError,
    GpuValidationError,
    InputError,
    MissingDataError,
    PteError,
    ShaderCompileError,
    UnsupportedError,
)

from .runtime import Method, Program, Runtime, Tensor

__version__ = "0.1.0"

__all__ = [
    "Method", "Program", "Runtime", "Tensor",
    "BudgetError", "ClosedError", "DataTooSmallError", "DeviceLostError", "FormatError",
    "GpuError", "GpuLimitError",
    "GpuValidationError", "InputError", "MissingDataError", "PteError", "ShaderCompileError",
    "UnsupportedError", "__version__",
]
