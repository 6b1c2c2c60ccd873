"""The op library. Importing this package imports every op family, which registers
its ops (ops/registry.py); this is the one place that names the families."""

from . import (any_reduce, arg_reduce, attention, batch_norm, binary, bmm,  # noqa: F401
               choose_qparams, conv, copying, dequantize_weight, embedding, embedding_byte,
               embedding_q4, fill, fused_elementwise, fused_linear, gated_linear, grid_sample,
               index_put, indexing, linear_dq8, linear_q4, linear_q4_gated, linear_q4_norm,
               linear_q4_residual, linear_q8,
               matmul, mixed, mm, norm, norm_linear, pad,
               pixel_shuffle, pool, quantize_tensor, rearrange, reduce, rms_norm, rope, sdpa,
               symint, unary, upsample, view)
from . import registry  # noqa: F401
