"""Choosing the next token from logits, in pure Python (no numpy needed; Pyodide-safe).

``logits`` is any sequence of floats (list, array.array, memoryview of float32, numpy row).
Randomness comes only from the ``random.Random`` passed in, so a seed fixes the output.
"""

from __future__ import annotations

import heapq
import math
import random

from ..errors import InputError


def argmax(logits) -> int:
    """Index of the largest logit; the first one on ties (as torch.argmax)."""
    best, best_value = 0, None
    for i, value in enumerate(logits):
        if best_value is None or value > best_value:
            best, best_value = i, value
    if best_value is None:
        raise InputError("no logits to choose from")
    return best


def candidates(logits, temperature: float, top_k: int | None, top_p: float | None) -> list[tuple[int, float]]:
    """(token, probability) pairs left after temperature, top-k and top-p, most likely first."""
    if not temperature > 0:
        raise InputError(f"temperature must be > 0 to sample (got {temperature}); use greedy for 0")
    if top_k is not None and top_k < 1:
        raise InputError(f"top_k must be >= 1 (got {top_k})")
    if top_p is not None and not 0 < top_p <= 1:
        raise InputError(f"top_p must be in (0, 1] (got {top_p})")
    n = len(logits)
    if n == 0:
        raise InputError("no logits to choose from")
    k = n if top_k is None else min(top_k, n)
    # Stable order: larger logit first, then smaller id (what a stable descending sort gives).
    kept = heapq.nsmallest(k, range(n), key=lambda i: (-logits[i], i))
    top = logits[kept[0]]
    weights = [math.exp((logits[i] - top) / temperature) for i in kept]
    total = math.fsum(weights)
    probs = [w / total for w in weights]
    if top_p is not None and top_p < 1:
        cut, mass = len(probs), 0.0
        for j, p in enumerate(probs):
            mass += p
            if mass >= top_p:  # smallest prefix whose mass reaches top_p
                cut = j + 1
                break
        kept, probs = kept[:cut], probs[:cut]
        total = math.fsum(probs)
        probs = [p / total for p in probs]
    return list(zip(kept, probs))


def sample(logits, rng: random.Random, *, temperature: float = 1.0, top_k: int | None = None,
           top_p: float | None = None) -> int:
    """One token drawn from the filtered, renormalised distribution."""
    pool = candidates(logits, temperature, top_k, top_p)
    r = rng.random()
    mass = 0.0
    for token, p in pool:
        mass += p
        if r < mass:
            return token
    return pool[-1][0]  # r fell in the rounding gap at the top


def choose(logits, rng: random.Random, *, temperature: float = 0.0, top_k: int | None = None,
           top_p: float | None = None) -> int:
    """Greedy when temperature is 0 (or None), otherwise ``sample``."""
    if not temperature:
        return argmax(logits)
    return sample(logits, rng, temperature=temperature, top_k=top_k, top_p=top_p)
