"""GGUF 4-bit blocks as the symmetric int4 groups of ExecuTorch's q4gsw linear, exactly.

ggml's Q4_0 block (18 bytes) is a float16 scale d and 32 nibbles q: x = d * (q - 8).
Q4_1 (20 bytes) adds a float16 minimum m: x = d * q + m. Element j of a block is the low
nibble of byte j for j < 16, the high nibble of byte j - 16 otherwise (ggml-quants.c's
dequantize_row_q4_0/1; checked against gguf's own dequantizer in tests/unit/test_gguf_groups.py).

Both are ``scale * (q - 8) + offset`` with groups of 32 along the row: Q4_0 with offset 0,
Q4_1 with offset m + 8 d. The int4 values and scales map onto q4gsw's symmetric groups
exactly; Q4_1's offset becomes a term of its own, offset[n, g] times the sum of the input's
group g (export/exact_q4.py), since q4gsw has no zero points.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import FormatError

GROUP = 32
_BLOCK_BYTES = {"Q4_0": 18, "Q4_1": 20}


@dataclass(frozen=True)
class Int4Groups:
    """Rows of int4 groups: ``values`` int8 [rows, K] in [-8, 7], ``scales`` float32
    [rows, K / 32], ``offsets`` float32 [rows, K / 32] or None (all zero)."""
    values: np.ndarray
    scales: np.ndarray
    offsets: np.ndarray | None

    @property
    def shape(self) -> tuple:
        return self.values.shape

    def __getitem__(self, index) -> "Int4Groups":
        """The groups of the rows ``index`` (a slice or an index list), as numpy picks them:
        what gguf_llama.arrays does to rows (Phi-3's fused splits, RoPE row orders)."""
        return Int4Groups(self.values[index], self.scales[index],
                          None if self.offsets is None else self.offsets[index])

    def dequantize(self) -> np.ndarray:
        """float32 [rows, K]: scale * value + offset, per group."""
        rows, k = self.values.shape
        x = self.values.reshape(rows, k // GROUP, GROUP).astype(np.float32) * self.scales[..., None]
        if self.offsets is not None:
            x = x + self.offsets[..., None]
        return x.reshape(rows, k)


def int4_groups(tensor) -> Int4Groups | None:
    """The exact int4 groups of a gguf ``ReaderTensor`` of type Q4_0 or Q4_1 (torch order:
    [rows, K]); None for any other type. A FormatError naming the tensor when its data does
    not hold whole blocks of its shape, or its scales are not finite."""
    kind = tensor.tensor_type.name
    if kind not in _BLOCK_BYTES:
        return None
    shape = tuple(int(d) for d in reversed(tensor.shape))
    if len(shape) != 2 or shape[1] % GROUP:
        raise FormatError(f"GGUF {kind} tensor of shape {list(shape)}: rows must be whole "
                          f"blocks of {GROUP}", field=tensor.name)
    rows, k = shape
    size = _BLOCK_BYTES[kind]
    data = np.asarray(tensor.data)
    if data.dtype != np.uint8 or data.size != rows * (k // GROUP) * size:
        raise FormatError(f"GGUF {kind} tensor data of {data.size} bytes does not hold "
                          f"{rows} x {k // GROUP} blocks of {size}", field=tensor.name)
    blocks = data.reshape(rows, k // GROUP, size)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    packed = blocks[..., size - 16:]
    q = np.concatenate([packed & 15, packed >> 4], axis=-1).astype(np.int8) - 8
    offsets = None
    if kind == "Q4_1":
        m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
        offsets = m + np.float32(8) * d
    for name, a in (("scales", d), ("offsets", offsets)):
        if a is not None and not np.isfinite(a).all():
            raise FormatError(f"GGUF {kind} tensor has {int((~np.isfinite(a)).sum())} "
                              f"non-finite block {name}", field=tensor.name)
    return Int4Groups(q.reshape(rows, k), d, offsets)
