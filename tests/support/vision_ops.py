"""The pooling, normalization, resampling and padding ops on hand-built graphs: float64
numpy references written from torch's CPU kernels (independent of ops/'s references),
and ``run_both``, which runs a graph natively and its op's CPU reference (the
interpreter's ``run_op_outputs``) on the same inputs."""

from __future__ import annotations

import math

import numpy as np
from pte_webgpu.model.graph import ListValue
from pte_webgpu.reference import interpreter as reference

from tests.support.graph import G


class VG(G):
    """G that remembers its inputs and constants by value id (for the CPU reference)."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.arrays = {}

    def input(self, array, *a, **kw):
        vid = super().input(array, *a, **kw)
        self.arrays[vid] = array
        return vid

    def const(self, array, *a, **kw):
        vid = super().const(array, *a, **kw)
        self.arrays[vid] = array
        return vid

    def outputs_list(self, *ids) -> int:
        return self._add(ListValue("value_list", tuple(ids)))


def run_both(g: VG, device, *outputs):
    """(GPU outputs, CPU reference outputs) of the graph's one op, as float64 arrays."""
    got = g.run(device, *outputs)
    arrays = {vid: reference.from_tensor(np.ascontiguousarray(a)) for vid, a in g.arrays.items()}
    ref = reference.run_op_outputs(g.ops[-1], g.values, arrays.__getitem__, "test")
    cpu = [np.array(ref[v].values, np.float64).reshape(g.values[v].shape) for v in outputs]
    return [a.astype(np.float64) for a in got], cpu


def _pair(v):
    v = [v] if isinstance(v, int) else list(v)
    return (v[0], v[0]) if len(v) == 1 else tuple(v)


def out_size(size, k, s, p, d, ceil):
    span = size + 2 * p - d * (k - 1) - 1 + (s - 1 if ceil else 0)
    o = span // s + 1
    if ceil and (o - 1) * s >= size + p:
        o -= 1
    return o


def max_pool(x, k, s=None, p=0, d=1, ceil=False):
    """(out, indices) of torch's max_pool2d over the last two dims (NaN wins, last one)."""
    k, p, d = _pair(k), _pair(p), _pair(d)
    s = _pair(s) if s else k
    x = np.asarray(x, np.float64)
    H, W = x.shape[-2:]
    oh, ow = (out_size(H, k[0], s[0], p[0], d[0], ceil), out_size(W, k[1], s[1], p[1], d[1], ceil))
    flat = x.reshape(-1, H, W)
    out = np.empty((flat.shape[0], oh, ow))
    idx = np.empty((flat.shape[0], oh, ow), np.int64)
    for n in range(flat.shape[0]):
        for i in range(oh):
            for j in range(ow):
                best, at = -math.inf, None
                for a in range(k[0]):
                    for b in range(k[1]):
                        h, w = i * s[0] - p[0] + a * d[0], j * s[1] - p[1] + b * d[1]
                        if 0 <= h < H and 0 <= w < W:
                            v = flat[n, h, w]
                            if at is None:
                                at = h * W + w
                            if v > best or np.isnan(v):
                                best, at = v, h * W + w
                out[n, i, j], idx[n, i, j] = best, at
    shape = x.shape[:-2] + (oh, ow)
    return out.reshape(shape), idx.reshape(shape)


def avg_pool(x, k, s=None, p=0, ceil=False, count_include_pad=True, divisor=None):
    k, p = _pair(k), _pair(p)
    s = _pair(s) if s else k
    x = np.asarray(x, np.float64)
    H, W = x.shape[-2:]
    oh, ow = out_size(H, k[0], s[0], p[0], 1, ceil), out_size(W, k[1], s[1], p[1], 1, ceil)
    flat = x.reshape(-1, H, W)
    out = np.zeros((flat.shape[0], oh, ow))
    for i in range(oh):
        for j in range(ow):
            h0, w0 = i * s[0] - p[0], j * s[1] - p[1]
            h1, w1 = min(h0 + k[0], H + p[0]), min(w0 + k[1], W + p[1])
            size = (h1 - h0) * (w1 - w0)
            h0, w0, h1, w1 = max(h0, 0), max(w0, 0), min(h1, H), min(w1, W)
            if h0 >= h1 or w0 >= w1:
                continue
            n = divisor or (size if count_include_pad else (h1 - h0) * (w1 - w0))
            out[:, i, j] = flat[:, h0:h1, w0:w1].sum(axis=(1, 2)) / n
    return out.reshape(x.shape[:-2] + (oh, ow))


def batch_norm(x, w, b, mean, var, eps):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    f = lambda a, d: np.ones(x.shape[1]) * d if a is None else a.astype(np.float64)  # noqa: E731
    return ((x - mean.astype(np.float64).reshape(shape)) / np.sqrt(var.astype(np.float64) + eps)
            .reshape(shape) * f(w, 1.0).reshape(shape) + f(b, 0.0).reshape(shape))


def group_norm(x, groups, w, b, eps):
    n, c = x.shape[:2]
    g = x.astype(np.float64).reshape(n, groups, -1)
    mean = g.mean(-1)
    rstd = 1 / np.sqrt(((g - mean[..., None]) ** 2).mean(-1) + eps)
    out = ((g - mean[..., None]) * rstd[..., None]).reshape(x.shape)
    shape = (1, c) + (1,) * (x.ndim - 2)
    if w is not None:
        out = out * w.astype(np.float64).reshape(shape)
    if b is not None:
        out = out + b.astype(np.float64).reshape(shape)
    return out, mean, rstd


def _f32(v):
    return float(np.float32(v))


def _nearest_index(size, out, factor):
    if out == size:
        return list(range(out))
    if out == 2 * size:
        return [d // 2 for d in range(out)]
    scale = np.float32(1.0 / factor) if factor else np.float32(np.float32(size) / np.float32(out))
    return [min(int(np.floor(np.float32(d) * scale)), size - 1) for d in range(out)]


def upsample_nearest(x, out_hw, factors=(None, None)):
    hs = _nearest_index(x.shape[-2], out_hw[0], factors[0])
    ws = _nearest_index(x.shape[-1], out_hw[1], factors[1])
    return np.asarray(x, np.float64)[..., hs, :][..., ws]


def _linear_taps(size, out, factor, align):
    """Per output index (i0, i1, l0, l1), torch's float32 arithmetic."""
    if out == size:
        return [(d, d, 1.0, 0.0) for d in range(out)]
    f = np.float32
    if align:
        scale = f(size - 1) / f(out - 1) if out > 1 else f(0)
    else:
        scale = f(1.0 / factor) if factor else f(size) / f(out)
    taps = []
    for d in range(out):
        src = scale * f(d) if align else max(scale * (f(d) + f(0.5)) - f(0.5), f(0))
        i0 = min(int(np.floor(src)), size - 1)
        l1 = min(max(src - f(i0), f(0)), f(1))
        taps.append((i0, i0 + (1 if i0 < size - 1 else 0), float(f(1) - l1), float(l1)))
    return taps


def upsample_bilinear(x, out_hw, align, factors=(None, None)):
    x = np.asarray(x, np.float64)
    hs = _linear_taps(x.shape[-2], out_hw[0], factors[0], align)
    ws = _linear_taps(x.shape[-1], out_hw[1], factors[1], align)
    out = np.empty(x.shape[:-2] + tuple(out_hw))
    for i, (h0, h1, a0, a1) in enumerate(hs):
        for j, (w0, w1, b0, b1) in enumerate(ws):
            top = x[..., h0, w0] * b0 + x[..., h0, w1] * b1
            bottom = x[..., h1, w0] * b0 + x[..., h1, w1] * b1
            out[..., i, j] = top * a0 + bottom * a1
    return out
