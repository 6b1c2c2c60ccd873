"""The op library. Importing this package imports every op family, which registers
its ops (ops/registry.py); this is the one place that names the families."""

from . import binary, embedding, matmul, norm, reduce, rms_norm, unary, view  # noqa: F401
from . import registry  # noqa: F401
