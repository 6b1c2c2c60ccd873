"""pte-webgpu: run ExecuTorch Vulkan-delegated programs on WebGPU from Python."""

from .errors import (
    BudgetError,
    ChatTemplateError,
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
from .model.method_meta import MethodMeta, TensorInfo
from .model.tensor import Tensor
from .ops.registry import operator_names
from .runtime import Method, Program, Runtime
from .runtime.options import RuntimeOptions

__version__ = "0.1.0"

__all__ = [
    "Method", "MethodMeta", "Program", "Runtime", "RuntimeOptions", "Tensor", "TensorInfo",
    "operator_names",
    "BudgetError", "ChatTemplateError", "ClosedError", "DataTooSmallError", "DeviceLostError", "FormatError",
    "GpuError", "GpuLimitError",
    "GpuValidationError", "InputError", "MissingDataError", "PteError", "ShaderCompileError",
    "UnsupportedError", "__version__",
]
