"""The op library. Importing this package imports every op family, which registers
its ops (ops/registry.py); this is the one place that names the families."""

from . import (any_reduce, attention, binary, bmm, copying, embedding, fill,  # noqa: F401
               fused_elementwise, fused_linear, index_put, indexing, matmul, mixed, norm, reduce,
               rms_norm, rope, symint, unary, view)
from . import dequantize_weight, embedding_byte, linear_q8, quantize_tensor  # noqa: F401 (8-bit)
from . import registry  # noqa: F401
