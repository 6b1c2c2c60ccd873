"""Runtime: Runtime → Program → Method, as in ExecuTorch's Python API."""

from ..model.tensor import Tensor
from .method import Method
from .program import Program
from .runtime import Runtime

__all__ = ["Method", "Program", "Runtime", "Tensor"]
