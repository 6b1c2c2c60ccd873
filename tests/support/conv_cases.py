"""Convolutions for the conv tests: a float64 numpy convolution (NCHW, any stride,
padding, dilation, groups, transposed with output_padding; 1-D as [N, C, L]), the
awkward shapes every variant is checked at, and a hand-built graph of one op."""

from __future__ import annotations

import numpy as np
from pte_webgpu.model import dtypes

# (name, x shape, weight shape, stride, padding, dilation, transposed, output_padding, groups)
CASES = [
    ("odd_3x3", (1, 3, 9, 11), (8, 3, 3, 3), (1, 1), (0, 0), (1, 1), False, (0, 0), 1),
    ("cin5_s2_d2_p1", (1, 5, 13, 10), (6, 5, 3, 3), (2, 2), (1, 1), (2, 2), False, (0, 0), 1),
    ("groups3_rect", (1, 6, 7, 8), (9, 2, 3, 2), (1, 2), (1, 0), (1, 1), False, (0, 0), 3),
    ("depthwise_s2", (1, 8, 11, 9), (8, 1, 3, 3), (2, 2), (1, 1), (1, 1), False, (0, 0), 8),
    ("depthwise_mult2", (1, 4, 10, 7), (8, 1, 3, 3), (1, 1), (1, 1), (1, 1), False, (0, 0), 4),
    ("pointwise", (1, 12, 7, 9), (16, 12, 1, 1), (1, 1), (0, 0), (1, 1), False, (0, 0), 1),
    ("wide_70ch", (1, 7, 12, 13), (70, 7, 3, 3), (1, 1), (1, 1), (1, 1), False, (0, 0), 1),
    ("batch2", (2, 3, 6, 7), (5, 3, 3, 3), (1, 1), (1, 1), (1, 1), False, (0, 0), 1),
    ("transposed_op1", (1, 4, 5, 6), (4, 6, 3, 3), (2, 2), (1, 1), (1, 1), True, (1, 1), 1),
    ("transposed_g2_d2", (2, 4, 4, 5), (4, 3, 3, 2), (2, 3), (2, 0), (2, 2), True, (1, 0), 2),
    ("conv1d", (1, 4, 33), (6, 4, 5), (2,), (2,), (1,), False, (0,), 1),
    ("conv1d_transposed", (1, 4, 9), (4, 3, 4), (2,), (1,), (1,), True, (0,), 1),
]


def out_shape(x, w, stride, padding, dilation, transposed, output_padding, groups):
    sizes = []
    for i in range(len(x) - 2):
        n, k, s, p, d = x[2 + i], w[2 + i], stride[i], padding[i], dilation[i]
        sizes.append((n - 1) * s - 2 * p + d * (k - 1) + output_padding[i] + 1 if transposed
                     else (n + 2 * p - d * (k - 1) - 1) // s + 1)
    return (x[0], w[1] * groups if transposed else w[0], *sizes)


def conv64(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    """The convolution in float64 (x, w, b: arrays; b may be None)."""
    one_d = x.ndim == 3
    if one_d:
        x, w = x[:, :, None], w[:, :, None]
        stride, padding, dilation, output_padding = ((1, *v) if len(v) == 1 else v for v in (
            stride, padding, dilation, output_padding))
        stride, padding, dilation, output_padding = ([1, v[-1]] for v in (
            stride, padding, dilation, output_padding))
        padding[0] = output_padding[0] = 0
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, cin, h, wd = x.shape
    (sy, sx), (py, px), (dy, dx) = stride, padding, dilation
    kh, kw = w.shape[2:]
    cin_g = cin // groups
    if transposed:
        cout_g = w.shape[1]
        oh = (h - 1) * sy - 2 * py + dy * (kh - 1) + output_padding[0] + 1
        ow = (wd - 1) * sx - 2 * px + dx * (kw - 1) + output_padding[1] + 1
        full = np.zeros((n, groups * cout_g, oh + 2 * py + sy + dy * kh, ow + 2 * px + sx + dx * kw))
        xg = x.reshape(n, groups, cin_g, h, wd)
        wg = w.reshape(groups, cin_g, cout_g, kh, kw)
        for ky in range(kh):
            for kx in range(kw):
                part = np.einsum("ngchw,gcd->ngdhw", xg, wg[:, :, :, ky, kx])
                full[:, :, ky * dy:ky * dy + sy * h:sy, kx * dx:kx * dx + sx * wd:sx] += \
                    part.reshape(n, groups * cout_g, h, wd)
        out = full[:, :, py:py + oh, px:px + ow]
    else:
        cout = w.shape[0]
        cout_g = cout // groups
        oh = (h + 2 * py - dy * (kh - 1) - 1) // sy + 1
        ow = (wd + 2 * px - dx * (kw - 1) - 1) // sx + 1
        xp = np.pad(x, ((0, 0), (0, 0), (py, py), (px, px)))
        out = np.zeros((n, groups, cout_g, oh, ow))
        wg = w.reshape(groups, cout_g, cin_g, kh, kw)
        for ky in range(kh):
            for kx in range(kw):
                tap = xp[:, :, ky * dy:ky * dy + sy * (oh - 1) + 1:sy,
                         kx * dx:kx * dx + sx * (ow - 1) + 1:sx]
                out += np.einsum("ngchw,gdc->ngdhw", tap.reshape(n, groups, cin_g, oh, ow),
                                 wg[:, :, :, ky, kx])
        out = out.reshape(n, cout, oh, ow)
    if b is not None:
        out = out + b.astype(np.float64)[None, :, None, None]
    return out[:, :, 0] if one_d else out


def conv_graph(g, x, w, b, stride, padding, dilation, transposed, output_padding, groups,
               clamp=None, dtype=dtypes.FLOAT32):
    """One aten.convolution (or et_vk.conv_with_clamp when ``clamp`` = (lo, hi), None
    for no bound) on graph ``g``; returns the output's id."""
    shape = out_shape(x.shape, w.shape, stride, padding, dilation, transposed,
                      output_padding, groups)
    args = [g.input(x, dtype), g.const(w, dtype), g.null() if b is None else g.const(b, dtype),
            g.ints(stride), g.ints(padding), g.ints(dilation), g.bool(transposed),
            g.ints(output_padding), g.int(groups)]
    name = "aten.convolution.default"
    if clamp is not None:
        name = "et_vk.conv_with_clamp.default"
        args += [g.null() if v is None else g.double(v) for v in clamp]
    return g.op(name, *args, g.tensor(shape, dtype=dtype))
