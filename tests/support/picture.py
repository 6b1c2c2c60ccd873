"""The test picture of the demo page's image input, as RGB bytes and as a PNG, and the
page's preprocessing rule written out in numpy (an implementation independent of
web/image.js, which the tests compare with it; the fixtures' exporter computes the same
with torch). numpy and zlib only: no torch, no PIL, no download.

The rule (web/image.js states it on the page): crop the centre of the picture to the
model's aspect ratio, resize that crop to the model's H x W with bilinear interpolation,
antialiased when shrinking (torchvision's Resize, PIL's BILINEAR), scale to [0, 1],
normalize per channel with (x - mean) / std, one channel as BT.601 luma.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
LUMA = (0.299, 0.587, 0.114)


def picture(width: int = 60, height: int = 44) -> np.ndarray:
    """uint8 [height, width, 3]: red grows left to right, green top to bottom, a blue disc
    off centre and a dark bar, so a crop, a resize or a swapped channel changes the values."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    rgb = np.zeros((height, width, 3))
    rgb[..., 0] = 255 * x / (width - 1)
    rgb[..., 1] = 255 * y / (height - 1)
    disc = (x - 0.6 * width) ** 2 + (y - 0.45 * height) ** 2 < (0.25 * height) ** 2
    rgb[..., 2] = np.where(disc, 230, 40)
    rgb[int(0.75 * height):int(0.85 * height), : width // 3] = 20
    return np.round(rgb).astype(np.uint8)


def png(rgb: np.ndarray) -> bytes:
    """An 8-bit RGB PNG (no colour chunks: browsers decode it as sRGB, unchanged)."""
    height, width, _ = rgb.shape

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\0" + rgb[r].tobytes() for r in range(height))  # filter 0 per row
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows))
            + chunk(b"IEND", b""))


def crop_box(width: int, height: int, out_w: int, out_h: int) -> tuple[int, int, int, int]:
    """(left, top, crop width, crop height): the centred region of the model's aspect ratio."""
    scale = max(out_w / width, out_h / height)
    cw, ch = min(width, round(out_w / scale)), min(height, round(out_h / scale))
    return (width - cw) // 2, (height - ch) // 2, cw, ch


def _weights(size_in: int, size_out: int) -> np.ndarray:
    """[size_out, size_in] row-normalized triangle-filter weights, the filter stretched by
    the shrink factor (PIL's precompute_coeffs for BILINEAR)."""
    scale = size_in / size_out
    support = max(scale, 1.0)
    m = np.zeros((size_out, size_in))
    for i in range(size_out):
        center = (i + 0.5) * scale
        lo, hi = max(int(center - support + 0.5), 0), min(int(center + support + 0.5), size_in)
        j = np.arange(lo, hi)
        w = np.maximum(0.0, 1.0 - np.abs((j - center + 0.5) / support))
        m[i, lo:hi] = w / w.sum()
    return m


def preprocess(rgb: np.ndarray, out_h: int, out_w: int, channels: int = 3,
               mean=IMAGENET_MEAN, std=IMAGENET_STD) -> np.ndarray:
    """float32 [1, channels, out_h, out_w] by the page's rule, computed in float64."""
    left, top, cw, ch = crop_box(rgb.shape[1], rgb.shape[0], out_w, out_h)
    x = rgb[top:top + ch, left:left + cw].astype(np.float64) / 255
    if channels == 1:
        x = x @ np.array(LUMA)[:, None]
    x = np.einsum("oh,hwc,pw->cop", _weights(ch, out_h), x, _weights(cw, out_w))
    mean, std = np.array(mean, np.float64)[:, None, None], np.array(std, np.float64)[:, None, None]
    return ((x - mean) / std)[None].astype(np.float32)
