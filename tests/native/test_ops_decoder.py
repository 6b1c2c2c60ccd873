"""The decoder ops on graphs built by hand, natively, against numpy: RoPE (interleaved, HF
with a partial rotation and a start position), sdpa_with_kv_cache (GQA, a prefill at a
start position over a filled cache), index/select/slice on float and 4-byte words."""

from __future__ import annotations

import numpy as np
import pytest
from pte_webgpu.errors import UnsupportedError
from pte_webgpu.model import dtypes
from pte_webgpu.ops import attention_tiles

from tests.support.gpu_thread import native_device
from tests.support.graph import DG, Limited, rand


@pytest.fixture(scope="module")
def device():
    yield from native_device()


def _rope_interleaved(x, cos, sin):
    xr, xi = x[..., 0::2], x[..., 1::2]
    c, s = cos[None, :, None, :], sin[None, :, None, :]
    out = np.empty_like(x)
    out[..., 0::2] = xr * c - xi * s
    out[..., 1::2] = xr * s + xi * c
    return out


def _rope_hf(x, cos, sin, start):
    rot = cos.shape[-1]
    rows = slice(start, start + x.shape[1])
    c, s = cos[rows][None, :, None, :], sin[rows][None, :, None, :]
    r = x[..., :rot]
    half = rot // 2
    rotated = np.concatenate([-r[..., half:], r[..., :half]], -1)
    return np.concatenate([r * c + rotated * s, x[..., rot:]], -1)


def test_rotary_interleaved_q_and_k_with_gqa_heads(device):
    g = DG()
    xq, xk = rand(1, 3, 4, 8), rand(1, 3, 2, 8)
    cos, sin = rand(3, 4), rand(3, 4)
    qi, ki, ci, si = g.input(xq), g.input(xk), g.input(cos), g.input(sin)
    qo, ko = g.tensor(xq.shape), g.tensor(xk.shape)
    g.op("et_vk.apply_rotary_emb.default", qi, ki, ci, si, g.values_list([qo, ko]))
    got_q, got_k = g.run(device, qo, ko)
    np.testing.assert_allclose(got_q, _rope_interleaved(xq, cos, sin), atol=1e-5)
    np.testing.assert_allclose(got_k, _rope_interleaved(xk, cos, sin), atol=1e-5)


def test_rotary_hf_partial_rotation_from_a_start_row(device):
    g = DG()
    xq, xk = rand(1, 2, 3, 10), rand(1, 2, 1, 10)
    cos, sin = rand(9, 6), rand(9, 6)  # full tables, 6 of 10 dims rotate
    qi, ki, ci, si = g.input(xq), g.input(xk), g.input(cos), g.input(sin)
    qo, ko = g.tensor(xq.shape), g.tensor(xk.shape)
    g.op("et_vk.apply_rotary_emb_hf.default", qi, ki, ci, si, g.int(5), g.values_list([qo, ko]))
    got_q, got_k = g.run(device, qo, ko)
    np.testing.assert_allclose(got_q, _rope_hf(xq, cos, sin, 5), atol=1e-5)
    np.testing.assert_allclose(got_k, _rope_hf(xk, cos, sin, 5), atol=1e-5)


SDPA_CASES = {  # name: (query rows, query heads, KV heads, head dim, cache rows, start)
    "prefill at a start position": (3, 8, 2, 16, 10, 4),
    # one row over 251 visible rows: split cuts them into 10 parts of 26 (the last 17)
    "decode at a long context": (1, 9, 3, 64, 300, 250),
    "decode at position 0": (1, 4, 4, 32, 100, 0),
    # tiles: 16 query rows a tile, K/V tiles of 32 rows; the last of each partial, the
    # causal edge inside a tile (each row's own keys), and a tile every row sees whole
    "long prefill at a start position": (37, 6, 2, 64, 80, 21),
    # tiles at head dim 32: one output row a lane (weights read one by one); 7 query tiles
    "long prefill at head dim 32": (100, 3, 1, 32, 140, 30),
    "prefill at head dim 128": (10, 2, 1, 128, 40, 7),
    # tiles at head dim 128 on 32 KB of workgroup memory: V where K was; 4 output rows a
    # lane (weights read as vec4s)
    "long prefill at head dim 128": (45, 4, 2, 128, 100, 20),
    "prefill at head dim 16": (70, 2, 2, 16, 90, 3),
    # tiles: 240 keys at most, cut into 4 parts of 64; the cache's last rows and the new
    # ones meet inside part 1; rows past 64 keys merged by combine_tiles
    "long prefill over four key parts": (150, 4, 2, 64, 300, 90),
    "prefill at head dim 8": (70, 4, 2, 8, 75, 5),  # half the lanes idle: 16 rows x 8 columns
    # scores by 16 lanes a row, 5 products each (the last of them masked); the rows form
    # over 3 chunks of 256 rows, each scored 64 rows at a time
    "decode at head dim 80 past two chunks": (1, 4, 2, 80, 700, 600),
    # 18 visible rows: split's parts take 16 rows at least, so 2 parts hold rows
    "decode at a short context": (1, 6, 2, 32, 512, 17),
}


@pytest.mark.parametrize("form", ["rows", "elements", "split", "tiles"])
@pytest.mark.parametrize("case", list(SDPA_CASES))
def test_sdpa_with_kv_cache_after_earlier_rows(device, monkeypatch, form, case):
    """New rows at ``start`` of a cache whose first rows hold earlier keys, causal within
    the new rows, GQA; every kernel form against float64 numpy."""
    monkeypatch.setenv("PTE_WEBGPU_SDPA", form)
    d = SDPA_CASES[case][3]
    if form == "tiles" and attention_tiles.why_not(d, device.info.traits.workgroup_storage):
        with pytest.raises(UnsupportedError, match=f"head dim {d}"):
            _sdpa_case(device, case)
        return
    got, want = _sdpa_case(device, case)
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("case, storage, rows, shared", [
    ("long prefill at a start position", 16384, 16, True),  # D = 64: 2 output rows a lane
    ("long prefill at head dim 32", 13000, 16, True),  # 1 output row a lane
])
def test_sdpa_tiles_in_less_workgroup_memory(device, monkeypatch, case, storage, rows, shared):
    """The tiles form's smaller plans (ops/attention_tiles.py), on the device with its
    workgroup memory limit lowered: V staged where K was."""
    monkeypatch.setenv("PTE_WEBGPU_SDPA", "tiles")
    t = attention_tiles.plan(SDPA_CASES[case][3], storage)
    assert (t.rows, t.shared) == (rows, shared)
    got, want = _sdpa_case(Limited(device, maxComputeWorkgroupStorageSize=storage), case)
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("name", ["maxStorageBufferBindingSize", "maxBufferSize"])
@pytest.mark.parametrize("limit, parts", [(400_000, 2), (200_000, 1)])
def test_sdpa_tiles_with_fewer_key_parts(device, monkeypatch, name, limit, parts):
    """Where the parts' shares of a long prefill would pass the adapter's binding or
    buffer limit (4 parts: 634 KB here), the tiles form cuts the keys into fewer parts,
    down to one (no shares, no merge)."""
    monkeypatch.setenv("PTE_WEBGPU_SDPA", "tiles")
    case = "long prefill over four key parts"
    s, h, _, d, _, _ = SDPA_CASES[case]
    assert attention_tiles.parts_scratch(s, h, d, 2 * parts) > limit
    assert attention_tiles.parts_scratch(s, h, d, parts) <= limit
    got, want = _sdpa_case(Limited(device, **{name: limit}), case)
    np.testing.assert_allclose(got, want, atol=1e-5)


def _sdpa_case(device, case):
    """(ours, float64 numpy) for one of SDPA_CASES."""
    g = DG()
    s, h, hkv, d, t, start = SDPA_CASES[case]
    q, k, v = rand(1, s, h, d), rand(1, s, hkv, d), rand(1, s, hkv, d)
    kc, vc = np.zeros((1, t, hkv, d), np.float32), np.zeros((1, t, hkv, d), np.float32)
    kc[:, :start], vc[:, :start] = rand(1, start, hkv, d), rand(1, start, hkv, d)
    qi, ki, vi = g.input(q), g.input(k), g.input(v)
    kci, vci = g.state_const(kc), g.state_const(vc)
    out = g.tensor(q.shape)
    g.op("sdpa_with_kv_cache.default", qi, ki, vi, kci, vci, g.int(start), g.int(1), g.null(),
         g.int(0), g.bool(True), g.null(), out)
    (got,) = g.run(device, out)
    kc[:, start:start + s], vc[:, start:start + s] = k, v
    want = np.zeros_like(q, dtype=np.float64)
    for i in range(s):
        for head in range(h):
            kv = head // (h // hkv)
            keys, vals = kc[0, :start + i + 1, kv], vc[0, :start + i + 1, kv]
            scores = keys.astype(np.float64) @ q[0, i, head] / np.sqrt(d)
            w = np.exp(scores - scores.max())
            want[0, i, head] = (w / w.sum()) @ vals
    return got, want


@pytest.mark.parametrize("form", ["rows", "split", "tiles"])
def test_sdpa_masked_keys_inf_values_stay_out(device, monkeypatch, form):
    """Values a row does not see are never weighed (0 x inf would be NaN): the last new
    row's v is inf, the last key of each 32-row K/V tile NaN where only later rows see
    it; rows before see finite values only, rows after get what torch's softmax gives."""
    monkeypatch.setenv("PTE_WEBGPU_SDPA", form)
    g = DG()
    s, h, hkv, d, t, start = 70, 2, 1, 32, 96, 5
    q, k, v = rand(1, s, h, d), rand(1, s, hkv, d), rand(1, s, hkv, d)
    v[0, s - 1, 0, 3] = np.inf
    v[0, 31 - start, 0, 0] = np.nan  # cache row 31, seen from query row 26 on
    kc, vc = np.zeros((1, t, hkv, d), np.float32), np.zeros((1, t, hkv, d), np.float32)
    kc[:, :start], vc[:, :start] = rand(1, start, hkv, d), rand(1, start, hkv, d)
    out = g.tensor(q.shape)
    g.op("sdpa_with_kv_cache.default", g.input(q), g.input(k), g.input(v), g.state_const(kc),
         g.state_const(vc), g.int(start), g.int(1), g.null(), g.int(0), g.bool(True),
         g.null(), out)
    (got,) = g.run(device, out)
    assert np.isfinite(got[0, :31 - start]).all()
    assert np.isnan(got[0, 31 - start:, :, 0]).all()
    assert np.isfinite(got[0, 31 - start:s - 1, :, 1:]).all()
    assert np.isinf(got[0, s - 1, :, 3]).all()


def _attention(q, kc, vc, upto):
    """float64 causal attention of q [1, S, H, D] over cache rows [0, upto + s] (GQA)."""
    _, s, h, d = q.shape
    want = np.zeros(q.shape)
    for i in range(s):
        for head in range(h):
            kv = head // (h // kc.shape[2])
            keys, vals = kc[0, :upto + i + 1, kv], vc[0, :upto + i + 1, kv]
            w = np.exp(keys.astype(np.float64) @ q[0, i, head] / np.sqrt(d))
            want[0, i, head] = (w / w.sum()) @ vals
    return want


@pytest.mark.parametrize("case", ["sliced at the start", "one row sliced at the start",
                                  "step 2", "two starts", "tables not constant"])
def test_rope_tables_sliced_at_input_pos_are_read_whole(device, case):
    """The llama export's RoPE tables sliced at input_pos (dim 0, step 1, one start, constant
    tables) reach the folded attention whole (pte_webgpu.sdpa_rope_rows) and the slices
    go; any other slice keeps them (pte_webgpu.sdpa_rope). Either way numpy's RoPE of the
    sliced tables, then attention: a prefill (the rope kernel's interleaved_rows) and one
    row (the attention turning q and k as it reads them)."""
    from pte_webgpu.model.graph import Graph
    from pte_webgpu.runtime import fusion
    from pte_webgpu.runtime.storage import WIDE

    g = DG()
    s, h, hkv, d, t, start = 1 if case.startswith("one row") else 3, 4, 2, 8, 16, 5
    step = 2 if case == "step 2" else 1
    starts = (start, start - 1 if case == "two starts" else start)
    q, k, v = rand(1, s, h, d), rand(1, s, hkv, d), rand(1, s, hkv, d)
    tables = rand(t, d // 2), rand(t, d // 2)
    kc, vc = np.zeros((1, t, hkv, d), np.float32), np.zeros((1, t, hkv, d), np.float32)
    kc[:, :start], vc[:, :start] = rand(1, start, hkv, d), rand(1, start, hkv, d)
    qi, ki, vi = g.input(q), g.input(k), g.input(v)
    kci, vci = g.state_const(kc), g.state_const(vc)
    sliced = []
    for table, at in zip(tables, starts):
        whole = g.input(table) if case == "tables not constant" else g.const(table)
        sliced.append(g.op("aten.slice_copy.Tensor", whole, g.int(0), g.int(at),
                           g.int(at + s * step), g.int(step), g.tensor((s, d // 2))))
    qo, ko, out = g.tensor(q.shape), g.tensor(k.shape), g.tensor(q.shape)
    g.op("et_vk.apply_rotary_emb.default", qi, ki, *sliced, g.values_list([qo, ko]))
    g.op("sdpa_with_kv_cache.default", qo, ko, vi, kci, vci, g.int(start), g.int(1), g.null(),
         g.int(0), g.bool(True), g.null(), out)
    fused = fusion.fuse(Graph(g.values, g.ops, g.inputs, [out], g.constants), WIDE.nbytes,
                        1 << 27)
    names = [op.name for op in fused.ops]
    whole_read = case.endswith("sliced at the start")
    assert ("pte_webgpu.sdpa_rope_rows" in names) == whole_read, names
    assert ("aten.slice_copy.Tensor" in names) != whole_read, names
    (got,) = g.run(device, out)
    cos, sin = (tb[at:at + s * step:step] for tb, at in zip(tables, starts))
    kc[:, start:start + s], vc[:, start:start + s] = _rope_interleaved(k, cos, sin), v
    want = _attention(_rope_interleaved(q, cos, sin), kc, vc, start)
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("dtype", [dtypes.FLOAT32, dtypes.INT32, dtypes.BOOL])
def test_select_and_slice_on_floats_and_words(device, dtype):
    g = DG()
    x = (np.arange(60).reshape(3, 4, 5) % 3 == 1) if dtype is dtypes.BOOL else \
        (np.arange(60).reshape(3, 4, 5) * 7 - 100).astype(dtype.name)
    xi = g.input(x, dtype)
    last = g.op("aten.select_copy.int", xi, g.int(1), g.int(-1), g.tensor((3, 5), dtype=dtype))
    sl = g.op("aten.slice_copy.Tensor", xi, g.int(2), g.int(-4), g.int(100), g.int(2),
              g.tensor((3, 4, 2), dtype=dtype))
    got_last, got_slice = g.run(device, last, sl)
    np.testing.assert_array_equal(got_last.astype(x.dtype), x[:, -1])
    np.testing.assert_array_equal(got_slice.astype(x.dtype), x[:, :, -4:100:2])


def test_index_tensor_rows_and_a_negative_index(device):
    g = DG()
    table = rand(7, 6)
    idx = np.array([[3, -1], [0, 6]], np.int32)
    ti, ii = g.input(table), g.input(idx, dtypes.INT32)
    out = g.op("aten.index.Tensor", ti, g.values_list([ii]), g.tensor((2, 2, 6)))
    (got,) = g.run(device, out)
    np.testing.assert_array_equal(got, table[idx])
