"""et_vk.embedding_q4gsw natively on graphs built by hand: both nibble orders, rows that
do not start on a word (D / 2 % 4 != 0), any index shape, ids outside the table (a row of
zeros and the id flag, as aten.embedding here); bad layouts fail at load."""

import numpy as np
import pytest
from pte_webgpu.errors import FormatError
from pte_webgpu.model import dtypes

from tests.support.graph import G
from tests.support.quant_dq8 import pack_nibbles

NAME = "et_vk.embedding_q4gsw.default"


def table(vocab, dim, group, seed):
    rng = np.random.default_rng(seed)
    w = rng.integers(-8, 8, (vocab, dim))
    scales = (rng.random((vocab, dim // group)) + 0.1).astype(np.float32)
    return w, scales


def build(w, scales, group, ids, low_first=True, packed=None, scales_const=None):
    g = G()
    dim = w.shape[1]
    out = g.tensor(ids.shape + (dim,))
    g.op(NAME, g.const(pack_nibbles(w, low_first, pad_to=2) if packed is None else packed,
                       dtypes.UINT8),
         g.const(scales if scales_const is None else scales_const), g.int(group),
         g.input(ids.astype(np.int32), dtypes.INT32), g.bool(low_first), out)
    return g, out


def want(w, scales, group, ids):
    deq = (w * np.repeat(scales, group, axis=1)).astype(np.float32)
    return deq[ids]


@pytest.mark.parametrize("low_first", [True, False])
@pytest.mark.parametrize("vocab,dim,group,ids_shape", [
    (96, 64, 32, (1, 27)), (50, 36, 12, (5,)), (7, 6, 2, (2, 3)), (300, 128, 128, (1, 1))])
def test_rows_match_the_dequantized_table(device, low_first, vocab, dim, group, ids_shape):
    w, scales = table(vocab, dim, group, seed=vocab + dim)
    ids = np.random.default_rng(1).integers(0, vocab, ids_shape)
    g, out = build(w, scales, group, ids, low_first)
    (got,) = g.run(device, out)
    assert np.array_equal(got, want(w, scales, group, ids))


def test_the_nibble_order_matters(device):
    w, scales = table(10, 8, 4, seed=2)
    ids = np.arange(10).reshape(1, 10)
    g, out = build(w, scales, 4, ids, low_first=True,
                   packed=pack_nibbles(w, low_first=False, pad_to=2))
    (got,) = g.run(device, out)
    assert not np.array_equal(got, want(w, scales, 4, ids))


@pytest.mark.parametrize("bad", [10, -1])
def test_ids_outside_the_table_give_zeros_and_the_flag(device, bad):
    w, scales = table(10, 8, 4, seed=3)
    ids = np.array([[3, bad, 0]])
    g, out = build(w, scales, 4, ids)
    (got,) = g.run(device, out)
    assert np.all(got[0, 1] == 0)
    assert np.array_equal(got[0, ::2], want(w, scales, 4, ids[:, ::2])[0])
    count, claimed, position, value = g.id_flags[0]
    assert (count, claimed, position, value) == (1, 1, 1, bad)


@pytest.mark.parametrize("kw,match", [
    (dict(group=0), "group size 0 does not divide D = 8"),
    (dict(group=3), "group size 3 does not divide D = 8"),
    (dict(packed=np.zeros((10, 3), np.uint8)), r"weights \[10, 3\] should be"),
    (dict(scales_const=np.ones((10, 1), np.float32)), r"scales \[10, 1\] should be"),
    (dict(scales_const=np.full((10, 2), np.nan, np.float32)), r"scales .* holds nan"),
    (dict(scales_const=np.full((10, 2), np.inf, np.float32)), r"scales .* holds inf"),
])
def test_bad_layouts_fail_at_load(device, kw, match):
    w, scales = table(10, 8, 4, seed=4)
    group = kw.pop("group", 4)
    g, out = build(w, scales, group, np.array([[1, 2]]), **kw)
    with pytest.raises(FormatError, match=match) as e:
        g.run(device, out)
    assert "embedding_q4gsw" in str(e.value)
