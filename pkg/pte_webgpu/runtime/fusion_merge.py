"""The split attention's merge left to the linear after it: an attention op whose output
only one linear reads (through reshapes), as its input (the o projection), is marked in
graph.meta["merged"] {attention output: the linear's input}. The graph is not rewritten:
at build the attention, where it takes the flash-decoding pair, leaves its merge to that
linear's matrix-vector prologue (ops/attention_merge.py), which saves a decode step a
dispatch a layer."""

from __future__ import annotations

from ..ops.attention import SDPA_ROPE, SDPA_ROPE_HF, SDPA_ROPE_ROWS
from ..ops.fused_linear import FUSED as FUSED_LINEAR
from ..ops.linear_q4 import OFFSETS, Q4GSW
from ..ops.linear_q4_residual import RESIDUAL as Q4_RESIDUAL
from .views import forward_views, placed_ops

ATTENTION = {"sdpa_with_kv_cache.default": 12, SDPA_ROPE: 14, SDPA_ROPE_HF: 15,
             SDPA_ROPE_ROWS: 15}
# the linears whose product (ops/matmul.py, ops/linear_q4.py) takes the merge: their
# input is args[0], bound at 0
LINEARS = {"aten.linear.default": 4, FUSED_LINEAR: 5, Q4GSW: 6, OFFSETS: 7, Q4_RESIDUAL: 8}
ENABLED = True  # tests turn this alone off, to compare with the merge's own dispatch


def mark_merges(f) -> None:
    """``f``: a fusion._Fusion; marks f.merged."""
    if not ENABLED:
        return
    for i, op in placed_ops(f, ATTENTION):
        _, x, reader = forward_views(f, op.args[-1])
        if reader is None or reader <= i:
            continue
        linear = f.placed[reader]
        if LINEARS.get(linear.name) != len(linear.args) or linear.args[0] != x \
                or x in linear.args[1:]:
            continue
        f.merged[op.args[-1]] = x
        f._count("attention merge + linear")
