"""The demo page's image models: which methods take a picture, the picture's tensor as
the page sends it (web/image.js crops, resizes and normalizes it), and how an output is
shown by its shape (a classifier's top classes, a segmentation's per-pixel classes)."""

from __future__ import annotations

import math

from ..errors import InputError
from ..model import dtypes
from ..model.tensor import Tensor
from ..reference import interpreter as reference

TOP_CLASSES = 5


def image_input(specs) -> dict | None:
    """``{"channels", "height", "width"}`` when a method takes one picture: its only input
    a float ``[1, C, H, W]`` tensor with C 1 or 3; else None. ``specs``: [(shape, dtype)]."""
    if len(specs) != 1:
        return None
    shape, dtype = specs[0]
    if (dtype not in reference.FLOAT_DTYPES or shape is None or len(shape) != 4
            or shape[0] != 1 or shape[1] not in (1, 3) or min(shape[2:]) < 1):
        return None
    return {"channels": shape[1], "height": shape[2], "width": shape[3]}


def picture_tensor(shape, data) -> Tensor:
    """The page's picture: float32 little-endian NCHW bytes of ``shape``."""
    shape = [int(d) for d in shape]
    if len(shape) != 4 or shape[0] != 1:
        raise InputError(f"a picture tensor is [1, C, H, W], not {shape}")
    return Tensor(bytes(data), shape, dtypes.FLOAT32)


def output_view(shape, values: list) -> dict | None:
    """How the page shows an image model's output: ``[1, K]`` or ``[K]`` (K >= 2) as
    classes, top ones first, with softmax probabilities; ``[1, C, H, W]`` (C >= 2) as the
    class of each pixel (argmax over C as torch's: the first of equal ones, NaN above all);
    else None."""
    if (len(shape) == 1 or len(shape) == 2 and shape[0] == 1) and shape[-1] >= 2:
        probabilities = softmax(values)
        order = sorted(range(len(values)), key=lambda k: -probabilities[k])  # stable: ties by index
        return {"kind": "classes", "classes": len(values),
                "top": [{"index": k, "probability": probabilities[k], "logit": values[k]}
                        for k in order[:TOP_CLASSES]]}
    if len(shape) == 4 and shape[0] == 1 and shape[1] >= 2:
        classes, height, width = shape[1:]
        plane = height * width
        argmax = [max(range(classes), key=lambda c: _nan_highest(values[c * plane + p]))
                  for p in range(plane)]
        counts = [0] * classes
        for c in argmax:
            counts[c] += 1
        return {"kind": "mask", "classes": classes, "height": height, "width": width,
                "argmax": argmax, "counts": counts}
    return None


def softmax(values: list) -> list:
    """In float64, shifted by the largest value; NaN everywhere when a value is NaN."""
    if any(v != v for v in values):
        return [math.nan] * len(values)
    top = max(values)
    if math.isinf(top):  # +inf: that class takes all (shared between equal ones)
        hits = [v == top for v in values]
        return [h / sum(hits) for h in hits]
    exps = [math.exp(v - top) for v in values]
    total = sum(exps)
    return [e / total for e in exps]


def _nan_highest(x: float) -> tuple:
    return (x != x, 0.0 if x != x else x)
