"""The op library. Importing this package imports every op family, which registers
its ops (ops/registry.py); this is the one place that names the families."""

from . import (attention, binary, embedding, indexing, matmul, norm, reduce, rms_norm,  # noqa: F401
               rope, symint, unary, view)
from . import registry  # noqa: F401
