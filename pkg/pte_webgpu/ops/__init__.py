"""The op library. Importing this package imports every op family, which registers
its ops (ops/registry.py); this is the one place that names the families."""

from . import any_reduce, binary, bmm, copying, embedding, fill, index_put, matmul, mixed, norm, reduce, rms_norm, unary, view  # noqa: F401
from . import registry  # noqa: F401
