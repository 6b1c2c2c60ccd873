"""bench/matmul_bench.py's host side: shape parsing and the summary it reports."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import matmul_bench  # noqa: E402


def test_shapes_are_m_k_n():
    assert matmul_bench.parse_shapes("1x4096x4096, 64x576x1536") == [(1, 4096, 4096),
                                                                     (64, 576, 1536)]
    assert matmul_bench.parse_shapes(None) == matmul_bench.DEFAULT_SHAPES
    for bad in ("1x4096", "0x2x2", "ax2x2", "1x2x3x4"):
        with pytest.raises(ValueError, match="MxKxN"):
            matmul_bench.parse_shapes(bad)


def _rec(impl, variant, us, gbps, dtype="float32"):
    return {"backend": "native", "adapter": "gpu", "shape": [1, 8, 8], "dtype": dtype,
            "impl": impl, "variant": variant, "us": us, "gbps": gbps, "tflops": 1.0,
            "timing": "timestamps"}


def test_summary_compares_the_chosen_variant_with_copy_and_torch():
    recs = [_rec("ours", "chosen gemv4-32x1", 10.0, 80.0), _rec("ours", "gemv4-32x1", 10.0, 80.0),
            _rec("ours", "gemv4-64x2", 8.0, 100.0), _rec("copy", "copy4-256", 5.0, 100.0),
            _rec("copy", "copy4-64x16", 6.0, 90.0), _rec("torch-cuda", "torch", 20.0, 40.0)]
    (row,) = matmul_bench.summary_rows(recs)
    assert row["best"]["variant"] == "gemv4-64x2"
    assert row["copy"]["variant"] == "copy4-256"
    text = matmul_bench.markdown(recs)
    assert "| 1x8x8 | float32 | gemv4-32x1 | 10.0 | 80 |" in text
    assert "0.80x" in text and "2.00x" in text  # ours / copy, torch / ours
