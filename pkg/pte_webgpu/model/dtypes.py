"""Element types: one table for names, sizes and the codes each format uses."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    name: str  # numpy-style name, e.g. "float32"
    itemsize: int
    struct_code: str  # for the struct/array modules ("" when Python has none)

    def __repr__(self) -> str:
        return self.name


(BOOL, UINT8, INT8, INT16, INT32, INT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16, UINT16, UINT32,
 UINT64) = ALL = tuple(DType(*row) for row in (
    ("bool", 1, "?"), ("uint8", 1, "B"), ("int8", 1, "b"), ("int16", 2, "h"), ("int32", 4, "i"),
    ("int64", 8, "q"), ("float16", 2, "e"), ("float32", 4, "f"), ("float64", 8, "d"),
    ("bfloat16", 2, ""), ("uint16", 2, "H"), ("uint32", 4, "I"), ("uint64", 8, "Q")))
BY_NAME = {d.name: d for d in ALL}

# ExecuTorch ScalarType codes (program.fbs / flat_tensor.fbs).
FROM_SCALAR_TYPE = {
    0: UINT8, 1: INT8, 2: INT16, 3: INT32, 4: INT64, 5: FLOAT16, 6: FLOAT32, 7: FLOAT64,
    11: BOOL, 15: BFLOAT16, 27: UINT16, 28: UINT32, 29: UINT64,
}

# Vulkan VkDataType codes (vkgraph.fbs). 127 (UNSET) maps to None.
FROM_VK_DATATYPE = {
    0: BOOL, 1: UINT8, 2: INT8, 3: INT32, 4: FLOAT16, 5: FLOAT32, 6: FLOAT64, 7: INT64,
}
VK_UNSET = 127


# Element counts saturate here: no buffer comes near it, and multiplying on past it would
# make a long dims list cost quadratic time in the size of the product.
NUMEL_CAP = 1 << 64


def numel(shape) -> int:
    """The product of ``shape``, or ``NUMEL_CAP`` when it is at least that large."""
    n = 1
    for d in shape:
        if d == 0:
            return 0
        if n < NUMEL_CAP:
            n = min(n * d, NUMEL_CAP)
    return n


def without_leading_ones(shape) -> tuple:
    """``shape`` with its leading 1s dropped: shapes that hold the same rows in another
    rank compare equal (a linear's [1, 1, K] input and its [1, K] output rows)."""
    shape = tuple(shape)
    while shape[:1] == (1,):
        shape = shape[1:]
    return shape
