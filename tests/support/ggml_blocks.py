"""An independent numpy dequantizer for the GGML tensor types our GGUF reader meets, written
from the block layouts of ggml's ggml-common.h (sizes in bytes per block):

- Q8_0 (32 values, 34 B): f16 d, int8 q[32]; x = d*q
- Q4_0 (32, 18 B): f16 d, u8 qs[16]; x[j] = d*(lo(qs[j]) - 8), x[j+16] = d*(hi(qs[j]) - 8)
- Q4_1 (32, 20 B): f16 d, f16 m, u8 qs[16]; x[j] = d*lo(qs[j]) + m, x[j+16] = d*hi(qs[j]) + m
- Q4_K (256, 144 B): f16 d, f16 dmin, u8 scales[12] (eight 6-bit scale/min pairs), u8 qs[128];
  64-value chunk c uses sub-blocks 2c (low nibbles of qs[32c:32c+32]) and 2c+1 (high nibbles):
  x = d*sc*q - dmin*mn
- Q6_K (256, 210 B): u8 ql[128] (low 4 bits), u8 qh[64] (high 2 bits), int8 scales[16], f16 d;
  x = d*scale[i//16]*(q - 32), q = low | high << 4
- BF16: the high 16 bits of a float32; F16, F32: IEEE values.

It is the reference the tests hold gguf.quants.dequantize to (tests only). The float32
products follow ggml's order (scale products first) so that agreement can be exact.
"""

from __future__ import annotations

import numpy as np

# type name -> (values per block, bytes per block)
BLOCKS = {"F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "Q8_0": (32, 34), "Q4_0": (32, 18),
          "Q4_1": (32, 20), "Q4_K": (256, 144), "Q6_K": (256, 210)}


def _f16(raw: np.ndarray) -> np.ndarray:
    """[n, 2] bytes -> [n, 1] float32 from little-endian f16."""
    return np.ascontiguousarray(raw).view("<f2").astype(np.float32)


def _nibbles(qs: np.ndarray):
    return (qs & 0x0F).astype(np.float32), (qs >> 4).astype(np.float32)


def _q8_0(b):
    return _f16(b[:, :2]) * b[:, 2:].view(np.int8).astype(np.float32)


def _q4_0(b):
    lo, hi = _nibbles(b[:, 2:])
    d = _f16(b[:, :2])
    return np.concatenate([d * (lo - 8), d * (hi - 8)], axis=1)


def _q4_1(b):
    lo, hi = _nibbles(b[:, 4:])
    d, m = _f16(b[:, :2]), _f16(b[:, 2:4])
    return np.concatenate([d * lo + m, d * hi + m], axis=1)


def _k4_scales(s: np.ndarray):
    """12 packed bytes -> (scales [n, 8], mins [n, 8]) of 6 bits each."""
    s = s.astype(np.uint8)
    sc = np.empty((s.shape[0], 8), np.uint8)
    mn = np.empty_like(sc)
    sc[:, :4] = s[:, 0:4] & 63
    mn[:, :4] = s[:, 4:8] & 63
    # sub-blocks 4..7: low 4 bits in bytes 8..11, the top 2 bits in the spare bits of 0..7
    sc[:, 4:] = (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc.astype(np.float32), mn.astype(np.float32)


def _q4_k(b):
    d, dmin = _f16(b[:, 0:2]), _f16(b[:, 2:4])
    sc, mn = _k4_scales(b[:, 4:16])
    scale, offset = d * sc, dmin * mn  # [n, 8], one per 32-value sub-block
    qs = b[:, 16:].reshape(-1, 4, 32)
    lo, hi = _nibbles(qs)
    q = np.stack([lo, hi], axis=2).reshape(-1, 8, 32)  # sub-block 2c = lo of chunk c, 2c+1 = hi
    return (scale[:, :, None] * q - offset[:, :, None]).reshape(-1, 256)


def _q6_k(b):
    ql = b[:, 0:128].reshape(-1, 2, 64)
    qh = b[:, 128:192].reshape(-1, 2, 32)
    scales = b[:, 192:208].view(np.int8).astype(np.float32)  # one per 16 values
    d = _f16(b[:, 208:210])
    out = np.empty((b.shape[0], 2, 4, 32), np.float32)  # half, quarter, lane
    for quarter, (lo_part, shift) in enumerate([(ql[:, :, :32] & 15, 0), (ql[:, :, 32:] & 15, 2),
                                                (ql[:, :, :32] >> 4, 4), (ql[:, :, 32:] >> 4, 6)]):
        q = lo_part.astype(np.int32) | (((qh >> shift) & 3).astype(np.int32) << 4)
        out[:, :, quarter, :] = (q - 32).astype(np.float32)
    scale = (d * scales).reshape(-1, 2, 4, 2)  # 16-value sub-block i = 8*half + 2*quarter + lane//16
    return (out.reshape(-1, 2, 4, 2, 16) * scale[..., None]).reshape(-1, 256)


_BLOCKED = {"Q8_0": _q8_0, "Q4_0": _q4_0, "Q4_1": _q4_1, "Q4_K": _q4_k, "Q6_K": _q6_k}


def dequantize(raw: np.ndarray, type_name: str) -> np.ndarray:
    """Flat float32 values of GGML type ``type_name`` stored in ``raw`` (any array of its bytes)."""
    data = np.ascontiguousarray(raw).reshape(-1).view(np.uint8)
    per_block, nbytes = BLOCKS[type_name]
    if data.size % nbytes:
        raise ValueError(f"{data.size} bytes are not whole {type_name} blocks of {nbytes}")
    if type_name == "F32":
        return data.view("<f4").astype(np.float32)
    if type_name == "F16":
        return data.view("<f2").astype(np.float32)
    if type_name == "BF16":
        return (data.view("<u2").astype(np.uint32) << 16).view(np.float32)
    return _BLOCKED[type_name](data.reshape(-1, nbytes)).reshape(-1)


def random_blocks(type_name: str, n_blocks: int, rng: np.random.Generator) -> np.ndarray:
    """Random valid blocks: random bytes with finite, moderate f16 scales (d, dmin, m)."""
    per_block, nbytes = BLOCKS[type_name]
    b = rng.integers(0, 256, size=(n_blocks, nbytes), dtype=np.uint8)
    half_fields = {"Q8_0": [0], "Q4_0": [0], "Q4_1": [0, 2], "Q4_K": [0, 2], "Q6_K": [208],
                   "F16": [0]}.get(type_name, [])
    for at in half_fields:
        b[:, at:at + 2] = (rng.standard_normal(n_blocks) * 0.05).astype("<f2").view(np.uint8).reshape(-1, 2)
    if type_name == "BF16":  # keep exponents finite: clear the top exponent bit
        b[:, 1] &= 0xBF
    if type_name == "F32":
        b = rng.standard_normal(n_blocks).astype("<f4").view(np.uint8).reshape(-1, 4)
    return b
