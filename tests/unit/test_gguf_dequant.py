"""gguf.quants.dequantize (what export/gguf_llama reads weights with) against an independent
dequantizer written from ggml's block layouts (tests/support/ggml_blocks.py): on data that
gguf's own quantizer made, on random valid blocks of every type, and on every tensor of the
real SmolLM2 GGUF of `make llm` (skipped without it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.support import ggml_blocks

gguf = pytest.importorskip("gguf")
from gguf import quants  # noqa: E402

TYPES = list(ggml_blocks.BLOCKS)
QUANTIZABLE = ["F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1"]  # what gguf.quants can make
SMOLLM2 = Path(__file__).resolve().parents[2] / "build/llm/SmolLM2-135M-Instruct.Q4_1.gguf"


def ours_vs_gguf(raw: np.ndarray, type_name: str) -> tuple[np.ndarray, np.ndarray]:
    qtype = gguf.GGMLQuantizationType[type_name]
    theirs = np.asarray(quants.dequantize(raw, qtype), dtype=np.float32).reshape(-1)
    return ggml_blocks.dequantize(raw, type_name), theirs


def assert_same(ours, theirs, type_name):
    assert ours.shape == theirs.shape, type_name
    assert np.isfinite(ours).all(), type_name
    # the same float32 products in the same order: equal up to a rounding of the result
    np.testing.assert_allclose(theirs, ours, rtol=1e-6, atol=1e-7 * float(np.abs(ours).max() or 1),
                               err_msg=type_name)


@pytest.mark.parametrize("type_name", QUANTIZABLE)
def test_gguf_quantized_data_dequantizes_alike(type_name):
    rng = np.random.default_rng(23)
    values = (rng.standard_normal((8, 512)) * rng.uniform(0.01, 3, size=(8, 1))).astype(np.float32)
    raw = quants.quantize(values, gguf.GGMLQuantizationType[type_name])
    ours, theirs = ours_vs_gguf(raw, type_name)
    assert_same(ours, theirs, type_name)
    # and the values come back within the format's own step (the layout is read right)
    per_block = ggml_blocks.BLOCKS[type_name][0]
    blocks = values.reshape(-1, max(per_block, 32))
    span = np.ptp(blocks, axis=1, keepdims=True)
    step = {"F32": 0, "F16": 1e-3, "BF16": 8e-3, "Q8_0": 1 / 127, "Q4_0": 1 / 7, "Q4_1": 1 / 15}
    bound = step[type_name] * np.maximum(span, np.abs(blocks).max(axis=1, keepdims=True)) + 1e-6
    assert (np.abs(ours.reshape(blocks.shape) - blocks) <= bound).all(), type_name


@pytest.mark.parametrize("type_name", TYPES)
def test_random_valid_blocks_dequantize_alike(type_name):
    rng = np.random.default_rng(hash(type_name) % 2**32)
    raw = ggml_blocks.random_blocks(type_name, 64, rng).reshape(-1)
    ours, theirs = ours_vs_gguf(raw, type_name)
    assert ours.size == 64 * ggml_blocks.BLOCKS[type_name][0]
    assert_same(ours, theirs, type_name)


def f16_bytes(x: float) -> np.ndarray:
    return np.array([x], "<f2").view(np.uint8)


def test_k_quant_layout_pins_known_values():
    """Hand-made blocks whose values follow from the layout alone (not from either decoder)."""
    q4k = np.zeros(144, np.uint8)
    q4k[0:2] = f16_bytes(0.5)  # d
    q4k[2:4] = f16_bytes(0.25)  # dmin
    q4k[4 + 0] = 3 | (1 << 6)      # sub-block 0 scale 3; top bits 01 -> sub-block 4's scale += 16
    q4k[4 + 4] = 2                 # sub-block 0 min 2
    q4k[4 + 8] = 0x5 | (0x7 << 4)  # sub-block 4: scale low bits 5, min 7
    q4k[16] = 0x9 | (0x4 << 4)     # value 0: low nibble 9 (sub-block 0); value 32: 4 (sub-block 1)
    q4k[16 + 64] = 0x6             # value 128 (chunk 2, low nibble): sub-block 4
    vals = ggml_blocks.dequantize(q4k, "Q4_K")
    assert vals[0] == 0.5 * 3 * 9 - 0.25 * 2
    assert vals[32] == 0.0  # sub-block 1 has scale 0, min 0
    assert vals[128] == 0.5 * (5 + 16) * 6 - 0.25 * 7
    q6k = np.zeros(210, np.uint8)
    q6k[208:210] = f16_bytes(2.0)
    q6k[192:208] = np.arange(1, 17, dtype=np.int8).view(np.uint8)
    q6k[0] = 0x3 | (0xA << 4)  # value 0 low 3; value 64 low 0xA
    q6k[128] = 0b10_01_00_11   # value 0 high 3, value 32 high 0, value 64 high 1, value 96 high 2
    vals = ggml_blocks.dequantize(q6k, "Q6_K")
    assert vals[0] == 2.0 * 1 * ((3 | 3 << 4) - 32)
    assert vals[32] == 2.0 * 3 * (0 - 32)
    assert vals[64] == 2.0 * 5 * ((0xA | 1 << 4) - 32)
    assert vals[96] == 2.0 * 7 * ((2 << 4) - 32)
    assert_same(*ours_vs_gguf(q4k, "Q4_K"), "Q4_K")
    assert_same(*ours_vs_gguf(q6k, "Q6_K"), "Q6_K")


@pytest.mark.skipif(not SMOLLM2.is_file(), reason="build/llm lacks the SmolLM2 GGUF: run `make llm`")
def test_every_smollm2_tensor_dequantizes_alike():
    from pte_webgpu.export import gguf_llama

    reader = gguf_llama.open_gguf(SMOLLM2)
    seen = set()
    for tensor in reader.tensors:
        type_name = tensor.tensor_type.name
        ours = ggml_blocks.dequantize(tensor.data, type_name)
        theirs = gguf_llama.dequantize(tensor)  # the exporter's path: reshaped to torch order
        assert theirs.shape == tuple(int(d) for d in reversed(tensor.shape)), tensor.name
        assert_same(ours, theirs.reshape(-1), f"{tensor.name} ({type_name})")
        seen.add(type_name)
    assert {"Q4_1", "Q8_0", "F32"} <= seen
