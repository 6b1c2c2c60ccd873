"""export/split_table.py: a tied table as two 4-bit halves (q = 16 h + l, h and l in
[-8, 7]) that the gather and the lm head share. The halves hold every q of [-136, 119]
exactly, stand for each row within half a step, use the row's narrowest step, are as
precise as the 8-bit per-channel head they replace, and a broken table is a FormatError."""

from __future__ import annotations

import numpy as np
import pytest
from pte_webgpu.errors import FormatError
from pte_webgpu.export.split_table import Q_MAX, Q_MIN, dequantize, split


def _rows(seed=3, v=64, d=96):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((v, d)) * rng.uniform(1e-3, 4, (v, 1))
    table[0] = 0.0  # a zero row
    table[1] = np.abs(table[1])  # one-sided rows, both signs
    table[2] = -np.abs(table[2])
    table[3, :] = 0.0
    table[3, 5] = 2.5  # one value
    table[4] = rng.standard_normal(d) * 1e-30  # tiny, below float32's normal range
    return table.astype(np.float32)


def test_every_q_of_the_range_is_held_exactly():
    q = np.arange(Q_MIN, Q_MAX + 1, dtype=np.float32)
    for scale in (0.25, 3.0e-3):
        table = np.stack([q * scale, -q * scale])  # the second row needs a negative scale
        values, scales = split(table)
        assert values.dtype == np.int8 and values.shape == (2, 2 * q.size)
        assert values.min() >= -8 and values.max() <= 7
        v = values.astype(np.int32)
        np.testing.assert_array_equal(16 * v[:, :q.size] + v[:, q.size:], [q, q])
        np.testing.assert_array_equal(scales[:, 1], [np.float32(scale), -np.float32(scale)])
        # the halves' sum rounds once more than q * scale: within one float32 ulp
        np.testing.assert_allclose(dequantize(values, scales), table, rtol=2.4e-7, atol=0)


def test_rows_within_half_a_step_with_the_narrowest_step():
    table = _rows()
    values, scales = split(table)
    assert values.shape == (table.shape[0], 2 * table.shape[1]) and scales.shape == (table.shape[0], 2)
    assert values.min() >= -8 and values.max() <= 7
    np.testing.assert_array_equal(scales[:, 0], 16 * scales[:, 1])
    step = np.abs(scales[:, 1]).astype(np.float64)
    err = np.abs(dequantize(values, scales).astype(np.float64) - table)
    assert (err <= step[:, None] * (0.5 + 1e-6)).all()
    np.testing.assert_array_equal(dequantize(values, scales)[0], 0.0)
    # the row's wider side spans 136 steps, the other at most 119: no coarser step fits
    hi, lo = table.max(axis=1).astype(np.float64), -table.min(axis=1).astype(np.float64)
    wide, narrow = np.maximum(np.maximum(hi, lo), 0), np.maximum(np.minimum(hi, lo), 0)
    need = np.maximum(np.maximum(wide / -Q_MIN, narrow / Q_MAX), np.finfo(np.float32).tiny)
    np.testing.assert_allclose(step, need, rtol=1e-6)
    # the wider side takes q's negative end: the scale's sign follows it
    signed = np.where(hi > lo, -1.0, 1.0)[5:]
    np.testing.assert_array_equal(np.sign(scales[5:, 1]), signed)


def test_as_precise_as_an_8_bit_per_channel_head():
    table = _rows(seed=11, v=256, d=576)[5:]
    values, scales = split(table)
    ours = np.sqrt(np.mean((dequantize(values, scales) - table) ** 2))
    s8 = np.abs(table).max(axis=1, keepdims=True) / 127
    int8 = np.sqrt(np.mean((np.clip(np.rint(table / s8), -127, 127) * s8 - table) ** 2))
    assert ours <= 1.07 * int8, (ours, int8)


@pytest.mark.parametrize("bad, what", [(np.ones(8), "shape"), (np.ones((0, 4)), "shape"),
                                       (np.array([[1.0, np.nan]]), "NaN"),
                                       (np.array([[np.inf, 1.0]]), "NaN or inf")])
def test_broken_tables_are_format_errors(bad, what):
    with pytest.raises(FormatError, match=what) as e:
        split(bad, name="token_embd.weight")
    assert "token_embd.weight" in str(e.value)
