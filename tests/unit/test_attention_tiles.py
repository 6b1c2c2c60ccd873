"""sdpa's tiles plan (ops/attention_tiles.py): the tile that fits the head dim and the
adapter's workgroup memory, and the per-lane steps it unrolls."""

import pytest
from pte_webgpu.ops import attention, attention_tiles
from pte_webgpu.ops.attention_tiles import Tiles, plan, why_not


@pytest.mark.parametrize("dim, storage, want", [
    (64, 32768, Tiles(64, 16, False)),  # K and V apart: 23.4 KB
    (64, 16384, Tiles(64, 16, True)),  # V staged where K was: 15.4 KB
    (128, 32768, Tiles(128, 16, True)),
    (128, 49152, Tiles(128, 16, False)),
    (8, 16384, Tiles(8, 16, False)),
    (256, 32768, None),
    (256, 65536, Tiles(256, 16, True)),
])
def test_the_tile_that_fits(dim, storage, want):
    got = plan(dim, storage)
    assert got == want
    if got is not None:
        assert got.storage <= storage
        assert got.score_rows * 8 == got.rows  # 8 lane rows of scores cover the tile
        # the output's lanes: dim / 8 across, out_rows each, as many rows as the tile
        assert 8 * attention_tiles.LANES // got.dim * got.out_rows >= got.rows


def test_head_dims_it_cannot_tile_are_named():
    assert "head dim 80" in why_not(80, 32768)
    assert "head dim 4" in why_not(4, 32768)
    assert "needs" in why_not(256, 32768) and "32768" in why_not(256, 32768)
    assert why_not(128, 32768) is None


@pytest.mark.parametrize("t", [Tiles(64, 32, False), Tiles(128, 16, True), Tiles(16, 32, False)])
def test_the_kernel_unrolls_each_lanes_rows(t):
    src = attention_tiles.kernel(attention.KERNEL, t, attention_tiles.PARTS).source()
    assert f"const TQ: u32 = {t.rows}u;" in src and f"const RO: u32 = {t.out_rows}u;" in src
    assert f"array<vec{t.score_rows}<f32>" in src  # q held as the scores read it
    for i in range(t.out_rows):  # every output row weighed, guarded, rescaled and stored
        assert f"part[{2 * i + 1}] += " in src and f"let m{i} = seen(" in src
        assert f"store_row(s0 + base + {i}u" in src
    assert f"part[{2 * t.out_rows}]" not in src
    assert ("SHARED_KV: bool = true" in src) == t.shared
