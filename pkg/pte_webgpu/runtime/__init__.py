"""Runtime: Runtime → Program → Method, as in ExecuTorch's Python API."""

from .method import Method
from .program import Program
from .runtime import Runtime
from ..tensor import Tensor  # re-exported: pte_webgpu.runtime.Tensor keeps working

__all__ = ["Method", "Program", "Runtime", "Tensor"]
