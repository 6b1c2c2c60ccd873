"""export/gguf_groups.py: a GGUF's Q4_0 / Q4_1 blocks read as int4 groups (values in
[-8, 7], scales, Q4_1's offsets) give back exactly what gguf's own dequantizer gives, on
data gguf's quantizer made and on random blocks; other types are not groups; broken data
is a FormatError naming the tensor."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from pte_webgpu.errors import FormatError
from pte_webgpu.export.gguf_groups import int4_groups

gguf = pytest.importorskip("gguf")
from gguf import quants  # noqa: E402


def _tensor(raw, type_name, rows, k, name="blk.0.attn_q.weight"):
    return SimpleNamespace(name=name, tensor_type=gguf.GGMLQuantizationType[type_name],
                           shape=np.array([k, rows]), data=raw)  # GGUF lists the fastest dim first


@pytest.mark.parametrize("type_name", ["Q4_0", "Q4_1"])
def test_groups_dequantize_exactly_as_gguf(type_name):
    rng = np.random.default_rng(5)
    rows, k = 12, 96
    values = (rng.standard_normal((rows, k)) * rng.uniform(0.01, 3, (rows, 1))).astype(np.float32)
    raw = quants.quantize(values, gguf.GGMLQuantizationType[type_name])
    g = int4_groups(_tensor(raw, type_name, rows, k))
    theirs = np.asarray(quants.dequantize(raw, gguf.GGMLQuantizationType[type_name]),
                        np.float32).reshape(rows, k)
    assert g.values.dtype == np.int8 and g.values.min() >= -8 and g.values.max() <= 7
    assert g.scales.shape == (rows, k // 32)
    assert (g.offsets is None) == (type_name == "Q4_0")
    # scale * (q - 8) + (m + 8 scale) against gguf's scale * q + m: one float32 rounding apart
    np.testing.assert_allclose(g.dequantize(), theirs, rtol=1e-6, atol=1e-6 * np.abs(theirs).max())


def test_random_blocks_every_nibble_and_row_order():
    """Blocks of random bytes (every nibble value in both halves): element j is the low
    nibble of byte j, element j + 16 the high one; rows pick and reorder like numpy."""
    rng = np.random.default_rng(9)
    rows, k = 6, 64
    blocks = rng.integers(0, 256, (rows, k // 32, 20), dtype=np.uint8)
    blocks[..., 0:2] = np.float16(0.25).tobytes()[0], np.float16(0.25).tobytes()[1]
    blocks[..., 2:4] = np.frombuffer(np.float16(-1.5).tobytes(), np.uint8)
    raw = blocks.reshape(rows, -1)
    g = int4_groups(_tensor(raw, "Q4_1", rows, k))
    theirs = np.asarray(quants.dequantize(raw, gguf.GGMLQuantizationType.Q4_1)).reshape(rows, k)
    np.testing.assert_array_equal(g.dequantize(), theirs)  # exact in float32 here
    picked = g[[4, 0]]
    np.testing.assert_array_equal(picked.dequantize(), theirs[[4, 0]])
    assert g[2:3].shape == (1, k)


@pytest.mark.parametrize("type_name", ["F32", "F16", "Q8_0"])
def test_other_types_are_not_groups(type_name):
    raw = quants.quantize(np.ones((2, 64), np.float32), gguf.GGMLQuantizationType[type_name])
    assert int4_groups(_tensor(raw, type_name, 2, 64)) is None


def test_broken_blocks_are_format_errors():
    raw = quants.quantize(np.ones((2, 64), np.float32), gguf.GGMLQuantizationType.Q4_1)
    with pytest.raises(FormatError, match="does not hold 2 x 2 blocks.*attn_q"):
        int4_groups(_tensor(raw[:, :30], "Q4_1", 2, 64))
    with pytest.raises(FormatError, match="whole blocks of 32"):
        int4_groups(_tensor(raw, "Q4_1", 4, 40))
    bad = raw.copy()
    bad[0, 0:2] = np.frombuffer(np.float16(np.inf).tobytes(), np.uint8)
    with pytest.raises(FormatError, match="1 non-finite block scales"):
        int4_groups(_tensor(bad, "Q4_1", 2, 64))
    bad = raw.copy()
    bad[1, 2:4] = np.frombuffer(np.float16(np.nan).tobytes(), np.uint8)
    with pytest.raises(FormatError, match="non-finite block offsets"):
        int4_groups(_tensor(bad, "Q4_1", 2, 64))
