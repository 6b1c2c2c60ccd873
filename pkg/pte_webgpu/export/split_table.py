"""A tied embedding table stored once for both the gather and the lm head, in 8 bits split
into two 4-bit halves.

ExecuTorch 1.5.1's Vulkan delegate gathers only float or 4-bit tables
(`et_vk.embedding_q4gsw`), and a 4-bit lm head costs more top-1 agreement than every other
linear together (docs/llm.md "q4"). So a tied table that the GGUF does not hold in 4-bit
groups (SmolLM2's Q8_0) went into the program twice: a 4-bit gather table and an 8-bit head.

Here each row is quantized to q in [-136, 119] with one scale s (negative where the row's
larger side is positive, so that side gets the 136 levels) and split as q = 16 h + l with
h, l in [-8, 7]. The table [V, 2D] holds h in its first D columns and l in the last D,
in 4-bit groups of D with scales (16 s, s): a row's dequantized halves add up to s * q.

- the gather: `embedding_q4gsw` of the [V, 2D] table, then first half + second half;
- the head: `linear_q4gsw(cat(x, x))` over K = 2D, which sums both halves' products.

Both ops pack the same int4 values into the same bytes (even k in the low nibble), and the
Vulkan serializer keys constants by the sha256 of their bytes, so the file holds the table
once: 28.3 MB for SmolLM2 where the two copies took 46.2 MB.
"""

from __future__ import annotations

import numpy as np

from ..errors import FormatError

Q_MIN, Q_MAX = -136, 119  # 16 h + l with h, l in [-8, 7]


def split(weight: np.ndarray, name: str = "the embedding table") -> tuple[np.ndarray, np.ndarray]:
    """``weight`` float [V, D] as (int4 values int8 [V, 2D] in [-8, 7], scales float32
    [V, 2]): row v is scales[v, 0] * values[v, :D] + scales[v, 1] * values[v, D:] with
    scales[v, 0] = 16 scales[v, 1], within half a step (|scales[v, 1]| / 2) of the row.
    A table that is not 2-D or holds NaN or inf is a FormatError naming ``name``."""
    w = np.asarray(weight, np.float64)
    if w.ndim != 2 or 0 in w.shape:
        raise FormatError(f"{name}: a table [V, D] was expected, got shape {list(w.shape)}")
    if not np.isfinite(w).all():
        raise FormatError(f"{name} holds NaN or inf")
    pos = np.maximum(w.max(axis=1), 0.0)
    neg = np.maximum(-w.min(axis=1), 0.0)
    # the wider side of each row takes the 136 levels of q's negative end
    step = np.where(neg >= pos, np.maximum(neg / -Q_MIN, pos / Q_MAX),
                    np.maximum(pos / -Q_MIN, neg / Q_MAX))
    step = np.maximum(step, np.finfo(np.float32).tiny)
    scale = np.where(neg >= pos, step, -step).astype(np.float32)
    q = np.clip(np.rint(w / scale[:, None].astype(np.float64)), Q_MIN, Q_MAX).astype(np.int16)
    low = (q + 8) % 16 - 8
    high = (q - low) // 16
    values = np.concatenate([high, low], axis=1).astype(np.int8)
    scales = np.stack([scale * np.float32(16), scale], axis=1)
    return values, scales


def dequantize(values: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """The table that ``split``'s halves stand for, float32 [V, D] (as the program adds them)."""
    d = values.shape[1] // 2
    v = values.astype(np.float32)
    return v[:, :d] * scales[:, :1] + v[:, d:] * scales[:, 1:]


def _int4(module, values: np.ndarray, scales: np.ndarray, group: int):
    """``module`` (an nn.Linear or nn.Embedding whose weight is [V, 2D]) with a torchao int4
    weight in groups of ``group`` holding exactly ``values`` and ``scales``."""
    import torch
    from torchao.quantization.granularity import PerGroup
    from torchao.quantization.quant_api import IntxWeightOnlyConfig, quantize_

    with torch.no_grad():
        module.weight.copy_(torch.from_numpy(np.repeat(scales, group, axis=1) * values))
    holder = torch.nn.Sequential(module)
    quantize_(holder, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(group)),
              lambda m, fqn: isinstance(m, type(module)))
    w = module.weight
    if tuple(w.qdata.shape) != values.shape or tuple(w.scale.shape) != scales.shape:
        raise ValueError(f"torchao gave a weight of {list(w.qdata.shape)} with scales "
                         f"{list(w.scale.shape)}, not {list(values.shape)} / {list(scales.shape)}")
    with torch.no_grad():
        w.qdata.copy_(torch.from_numpy(values))
        w.scale.copy_(torch.from_numpy(scales).to(w.scale.dtype))
        w.zero_point.zero_()
    return module


def modules(weight):
    """(embedding, head): torch modules over one split table made from ``weight`` (the tied
    float table [V, D]), for the model's ``tok_embeddings`` and ``output``."""
    import torch

    values, scales = split(weight.detach().cpu().numpy())
    vocab, width = weight.shape

    class SplitTableEmbedding(torch.nn.Module):
        """Gathers the [V, 2D] rows and adds their halves (16 s h + s l = s q)."""

        def __init__(self):
            super().__init__()
            self.table = _int4(torch.nn.Embedding(vocab, 2 * width), values, scales, width)

        def forward(self, ids):
            rows = self.table(ids)
            return rows[..., :width] + rows[..., width:]

    class SplitTableHead(torch.nn.Module):
        """The lm head over the same table: x against both halves, as one linear of K = 2D."""

        def __init__(self):
            super().__init__()
            self.linear = _int4(torch.nn.Linear(2 * width, vocab, bias=False), values, scales,
                                width)

        def forward(self, x):
            return self.linear(torch.cat([x, x], dim=-1))

        def dequantized_weight(self):
            w = self.linear.weight.dequantize()
            return w[:, :width] + w[:, width:]

    return SplitTableEmbedding(), SplitTableHead()
