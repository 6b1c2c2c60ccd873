"""Hand-built 8da4w graphs (choose_qparams_affine + linear_dq8ca_q4gsw) and 4-bit
embeddings in the layouts ExecuTorch's Vulkan serializer writes, with an independent
numpy reference of torchao's math (f32 qparams and quantization, float64 products)."""

from __future__ import annotations

import numpy as np
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ListValue

from tests.support.graph import G

F32 = np.float32
EPS = F32(2.0 ** -126)  # torchao's eps for float32 (finfo.smallest_normal)


def ceil_to(v: int, m: int) -> int:
    return -(-v // m) * m


def pack_nibbles(w: np.ndarray, low_first: bool = True, pad_to: int = 8) -> np.ndarray:
    """int [R, C] in [-8, 7] -> uint8 [R, ceil(C)/2]: element 2j in the low nibble
    (``low_first``) or the high one, each stored + 8; C padded with zeros to ``pad_to``."""
    r, c = w.shape
    full = np.zeros((r, ceil_to(c, pad_to)), np.int64)
    full[:, :c] = w
    u = (full + 8).astype(np.uint8)
    even, odd = u[:, 0::2], u[:, 1::2]
    return (even | (odd << 4)) if low_first else ((even << 4) | odd)


def qparams(x: np.ndarray, half: bool = False):
    """torchao ASYMMETRIC int8 per-row qparams in f32: (scale, zero point); ``half``: a
    float16 program's (eps 2^-14, the scale rounded to float16 first)."""
    lo = np.minimum(x.min(-1), F32(0)).astype(F32)
    hi = np.maximum(x.max(-1), F32(0)).astype(F32)
    scale = np.maximum(((hi - lo) / F32(255)).astype(F32), F32(2.0 ** -14) if half else EPS)
    scale = scale.astype(np.float16).astype(F32) if half else scale.astype(F32)
    zp = np.clip(F32(-128) - np.round((lo / scale).astype(F32)), -128, 127)
    return scale, zp.astype(np.int64)


def quantize_rows(x: np.ndarray, scale, zp) -> np.ndarray:
    inv = (F32(1) / scale).astype(F32)
    return np.clip(np.round((x * inv[..., None]).astype(F32)) + zp[..., None], -128, 127)


def dq8_reference(x, w, wscale, group, bias=None, half=False):
    """Eager 8da4w in float64: dequantized activations (f32) times dequantized weights."""
    scale, zp = qparams(x, half)
    xd = ((quantize_rows(x, scale, zp) - zp[..., None]) * scale[..., None]).astype(F32)
    wd = (w * np.repeat(wscale, group, axis=1)).astype(F32)
    out = xd.astype(np.float64) @ wd.astype(np.float64).T
    return out + (0 if bias is None else bias.astype(np.float64)), scale, zp


class Dq8Case:
    """x [rows, K] (or [1, rows, K]); weights int [N, K] in [-8, 7]; scales [K/group, N]."""

    def __init__(self, rows, k, n, group, seed=0, bias=True, lead=(), storage=None):
        rng = np.random.default_rng(seed)
        self.storage = storage  # runtime.storage.Storage(half=True): a float16 program
        self.half = storage is not None
        self.k, self.n, self.group = k, n, group
        self.x = rng.standard_normal(lead + (rows, k)).astype(F32)
        self.w = rng.integers(-8, 8, (n, k))
        self.wscale = (rng.random((n, k // group)) * 0.05 + 0.01).astype(F32)
        self.bias = rng.standard_normal(n).astype(F32) if bias else None
        if self.half:  # the float16 program's values
            self.x, self.wscale = (a.astype(np.float16).astype(F32) for a in (self.x, self.wscale))
            if bias:
                self.bias = self.bias.astype(np.float16).astype(F32)

    def graph(self, scales=None, packed=None, sums=None, group=None, choose=True):
        fl = dtypes.FLOAT16 if self.half else dtypes.FLOAT32
        g = G(**({"storage": self.storage} if self.half else {}),
              options=getattr(self, "options", None))
        groups = self.k // self.group
        xs = g.input(self.x, fl)
        lead = self.x.shape[:-1]
        scale, zp = g.tensor(lead, dtype=fl), g.tensor(lead, dtype=dtypes.INT8)
        if choose:
            g.op("torchao.choose_qparams_affine.default", xs, g.string("ASYMMETRIC"),
                 g.ints([1] * len(lead) + [self.k]), g.null(), g.int(-128), g.int(127),
                 g.null(), g.null(), g.null(), g.bool(False), g._add(ListValue("value_list", (scale, zp))))
        wsum = np.zeros((groups, ceil_to(self.n, 8)), np.int32)
        wsum[:, :self.n] = self.w.reshape(self.n, groups, self.group).sum(-1).T
        ws = np.zeros((groups, ceil_to(self.n, 4)), fl.name)
        ws[:, :self.n] = self.wscale.T
        out = g.tensor(lead + (self.n,), dtype=fl)
        g.op("et_vk.linear_dq8ca_q4gsw.default", xs, scale, zp,
             g.const(pack_nibbles(self.w) if packed is None else packed, dtypes.UINT8),
             g.const(wsum if sums is None else sums, dtypes.INT32),
             g.const(ws if scales is None else scales, fl),
             g.int(self.group if group is None else group),
             g.null() if self.bias is None else g.const(self.bias, fl), out)
        return g, out, scale, zp

    def reference(self):
        return dq8_reference(self.x, self.w, self.wscale, self.group, self.bias, self.half)
