"""Split K, shared by the matmul family's mm tiles (ops/matmul.py) and the implicit-GEMM
convolution (ops/conv.py): where a product's output tiles are too few to fill a large
GPU, each tile's K is cut into spans, one workgroup each. The spans store raw partial
sums into one scratch buffer [spans, outputs] (binding ``kparts``), and a second
dispatch adds them in span order (snippets.wgsl ``split_k_sum``) before the op's own
epilogue. The span count and the K of each are uniforms (``splits``, ``k_span``), so one
kernel serves every count.
"""

from __future__ import annotations

SCRATCH = "split K partial sums"  # one scratch buffer for every op's spans (runtime/build.py)


def spans(k: int, splits: int, step: int) -> tuple[int, int]:
    """(spans, K per span) for at most ``splits`` spans of a K walked in ``step``s: each
    span whole steps, none empty (the last may be short)."""
    splits = max(1, min(splits, -(-k // step)))
    span = -(-k // (splits * step)) * step
    return -(-k // span), span


def count(lanes: int, k: int, *, goal: int, min_span: int, most: int,
          bytes_per_span: int = 0, max_bytes: int = 0) -> int:
    """The rule for both families: spans of K per tile, doubled from 1 (at most ``most``)
    while the tiles' ``lanes`` times the spans stay under ``goal`` and each span keeps
    ``min_span`` of K at least; with ``max_bytes``, while the spans' partial sums
    (``bytes_per_span`` each) fit it."""
    s = 1
    while s < most and lanes * s < goal and k // (2 * s) >= min_span \
            and (not max_bytes or 2 * s * bytes_per_span <= max_bytes):
        s *= 2
    return s
