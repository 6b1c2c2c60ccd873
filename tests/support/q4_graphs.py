"""4-bit weight linears built by hand (tests/support/graph.py's G), packed as ExecuTorch's
serializer packs them (written here from its description in docs/quantized-formats.md),
with a float64 numpy reference of the dequantized product."""

from __future__ import annotations

import numpy as np
from pte_webgpu.model import dtypes

from tests.support.graph import G

Q4GSW, QCS4W = "et_vk.linear_q4gsw.default", "et_vk.linear_qcs4w.default"


def quantize(n: int, k: int, group: int, seed: int = 0):
    """(int4 weights [N, K] in [-8, 7], scales [N, K / group] float32)."""
    rng = np.random.default_rng(seed * 1009 + n * 31 + k)
    return (rng.integers(-8, 8, (n, k)).astype(np.int8),
            rng.uniform(0.01, 0.2, (n, k // group)).astype(np.float32))


def pack_q4gsw(w: np.ndarray) -> np.ndarray:
    """[N, ceil8(K) / 2] uint8: byte j = (w[2j + 1] + 8) << 4 | (w[2j] + 8), K padded
    with zeros to a multiple of 8."""
    n, k = w.shape
    padded = np.zeros((n, -(-k // 8) * 8), np.int16)
    padded[:, :k] = w
    u = (padded + 8).astype(np.uint8)
    return (u[:, 1::2] << 4 | u[:, 0::2]).astype(np.uint8)


def pack_qcs4w(w: np.ndarray) -> np.ndarray:
    """[N, K / 2] uint8, the high nibble first: byte j = (w[2j] + 8) << 4 | (w[2j + 1] + 8)."""
    u = (w.astype(np.int16) + 8).astype(np.uint8)
    return (u[:, 0::2] << 4 | u[:, 1::2]).astype(np.uint8)


def scales_rows(s: np.ndarray) -> np.ndarray:
    """[N, groups] scales as the serializer writes them: [groups, ceil4(N)] (zeros past N)."""
    n, groups = s.shape
    out = np.zeros((groups, -(-n // 4) * 4), np.float32)
    out[:, :n] = s.T
    return out


def dequantized(w: np.ndarray, s: np.ndarray) -> np.ndarray:
    """float64 [N, K]: w[n, k] * s[n, k / group]."""
    group = w.shape[1] // s.shape[1]
    return w.astype(np.float64) * np.repeat(s.astype(np.float64), group, axis=1)


def reference(x, w, s, bias=None) -> np.ndarray:
    out = x.astype(np.float64) @ dequantized(w, s).T
    return out if bias is None else out + bias.astype(np.float64)


def q4gsw_graph(x, w, s, group, bias=None, storage=None, options=None, lead=None,
                scales_dtype=dtypes.FLOAT32):
    """A graph of one q4gsw linear: (G, out id). ``lead``: the input's leading shape;
    with a half ``storage`` the input, bias and output are float16."""
    g = G(**({"storage": storage} if storage else {}), options=options)
    half = storage is not None and storage.half
    act = dtypes.FLOAT16 if half else dtypes.FLOAT32
    xi = g.input(x.reshape(lead + (x.shape[-1],)) if lead else x, act)
    wi = g.const(pack_q4gsw(w), dtypes.UINT8)
    si = g.const(scales_rows(s), scales_dtype)
    bi = g.null() if bias is None else g.const(bias, act)
    out = g.tensor((lead or x.shape[:-1]) + (w.shape[0],), dtype=act)
    g.op(Q4GSW, xi, wi, si, g.int(group), bi, out)
    return g, out
