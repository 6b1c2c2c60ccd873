"""bench/conv_bench.py's host side: shape parsing, the default shapes (ResNet-18's and
MobileNetV2's as convolutions the op accepts) and the table it reports."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import conv_bench  # noqa: E402
import conv_gpu  # noqa: E402


def test_shapes_parse_with_groups_and_batch():
    assert conv_bench.parse_shapes("64x56x56-64k3s1p1, 96x112x112-96k3s2p1g96b2") == [
        (64, 56, 56, 64, 3, 1, 1, 1, 1), (96, 112, 112, 96, 3, 2, 1, 96, 2)]
    for bad in ("64x56x56", "64x56-64k3s1p1", "64x56x56-64k3s1", "axbxc-1k1s1p1"):
        with pytest.raises(ValueError, match="CinxHxW"):
            conv_bench.parse_shapes(bad)


def test_default_shapes_are_valid_convolutions():
    shapes = conv_bench.parse_shapes(None)
    assert len(shapes) == len(conv_bench.DEFAULT_SHAPES)
    sizes = {(s[1], s[4], s[5]) for s in shapes}
    assert {(224, 7, 2), (56, 3, 1), (7, 3, 1), (56, 1, 2)} <= sizes  # stem, 3x3, 1x1 down
    for s in shapes:
        c = conv_gpu.conv_spec(*s)
        assert c.oh == (s[1] + 2 * s[6] - s[4]) // s[5] + 1
    assert conv_gpu.conv_spec(*shapes[0]).oh == 112  # the stem: 224 -> 112


def test_table_sets_the_chosen_variant_beside_the_best_copy_and_torch():
    shape = [1, 64, 56, 56, 64, 3, 1, 1, 1]
    recs = [dict(shape=shape, dtype="float32", impl=impl, variant=v, us=us)
            for impl, v, us in (("ours", "chosen gemm4-8x16k4", 40.0), ("ours", "direct", 90.0),
                                ("ours", "gemm4-8x16k4", 40.0), ("ours", "gemm4-8x8k2", 35.0),
                                ("copy", "copy4-256", 5.0), ("torch-cuda", "torch", 20.0))]
    text = conv_bench.markdown(recs)
    assert "| 1x64x56x56x64x3x1x1x1 | float32 | gemm4-8x16k4 | 40.0 | gemm4-8x8k2 | 35.0 | " \
           "5.0 | 20.0 | 0.50 |" in text
