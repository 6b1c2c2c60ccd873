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


def adaptive_avg_pool(x, out_hw):
    x = np.asarray(x, np.float64)
    H, W = x.shape[-2:]
    out = np.empty(x.shape[:-2] + tuple(out_hw))
    for i in range(out_hw[0]):
        h0, h1 = i * H // out_hw[0], -(-(i + 1) * H // out_hw[0])
        for j in range(out_hw[1]):
            w0, w1 = j * W // out_hw[1], -(-(j + 1) * W // out_hw[1])
            out[..., i, j] = x[..., h0:h1, w0:w1].mean(axis=(-2, -1))
    return out


def pixel_shuffle(x, r):
    *lead, c, h, w = x.shape
    y = x.reshape(*lead, c // (r * r), r, r, h, w)
    k = len(lead)
    y = y.transpose(*range(k), k, k + 3, k + 1, k + 4, k + 2)
    return y.reshape(*lead, c // (r * r), h * r, w * r)


def constant_pad(x, pad, value):
    """F.pad(x, pad, value=value) with crops for negative pads."""
    x = np.asarray(x, np.float64)
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    grow = [(max(a, 0), max(b, 0)) for a, b in widths]
    y = np.pad(x, grow, constant_values=value)
    crop = tuple(slice(-min(a, 0), y.shape[d] + min(b, 0)) for d, (a, b) in enumerate(widths))
    return y[crop]


def _grid_coord(v, size, padding, align):
    f = np.float32
    v = f(v)
    x = (v + f(1)) * (f(size - 1) / f(2)) if align else (v + f(1)) * (f(size) / f(2)) - f(0.5)
    if padding == 0:
        return x
    if padding == 2:
        low, span2 = (f(0), f(2) * f(size - 1)) if align else (f(-0.5), f(2) * f(size))
        if align and size <= 1:
            x = f(0)
        else:
            a = np.abs(x - low)
            with np.errstate(invalid="ignore"):  # inf: NaN, as torch's
                extra = a - np.trunc(a / span2) * span2
            x = min(extra, span2 - extra) + low
    return x if np.isnan(x) else f(min(max(x, f(0)), f(size - 1)))


def grid_sample(x, grid, mode, padding, align):
    """torch.nn.functional.grid_sample (mode 0 bilinear, 1 nearest; padding 0 zeros, 1
    border, 2 reflection) in torch's float32 coordinate steps, float64 sums."""
    x = np.asarray(x, np.float64)
    n, c, H, W = x.shape
    ho, wo = grid.shape[1:3]
    out = np.zeros((n, c, ho, wo))

    def tap(b, h, w):
        return x[b, :, h, w] if 0 <= h < H and 0 <= w < W else np.zeros(c)
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                sx = _grid_coord(grid[b, i, j, 0], W, padding, align)
                sy = _grid_coord(grid[b, i, j, 1], H, padding, align)
                if not (np.isfinite(sx) and np.isfinite(sy)):
                    continue
                if mode == 1:
                    out[b, :, i, j] = tap(b, int(np.rint(sy)), int(np.rint(sx)))
                    continue
                x0, y0 = int(np.floor(sx)), int(np.floor(sy))
                we, ns = float(sx - np.float32(x0)), float(sy - np.float32(y0))
                out[b, :, i, j] = (tap(b, y0, x0) * (1 - ns) * (1 - we) + tap(b, y0, x0 + 1)
                                   * (1 - ns) * we + tap(b, y0 + 1, x0) * ns * (1 - we)
                                   + tap(b, y0 + 1, x0 + 1) * ns * we)
    return out
