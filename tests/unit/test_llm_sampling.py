"""Sampling in pure Python against a numpy formulation of the same filters."""

from __future__ import annotations

import array
import random

import numpy as np
import pytest
from pte_webgpu.errors import InputError
from pte_webgpu.llm import sampling


def numpy_candidates(logits, temperature, top_k, top_p):
    x = np.asarray(logits, dtype=np.float64)
    order = np.argsort(-x, kind="stable")
    if top_k is not None:
        order = order[:top_k]
    p = np.exp((x[order] - x[order[0]]) / temperature)
    p /= p.sum()
    if top_p is not None and top_p < 1:
        cut = int(np.searchsorted(np.cumsum(p), top_p - 1e-12)) + 1  # first prefix reaching top_p
        order, p = order[:cut], p[:cut] / p[:cut].sum()
    return order, p


@pytest.mark.parametrize("seed", range(20))
def test_candidates_match_numpy(seed):
    rng = np.random.default_rng(seed)
    logits = (rng.standard_normal(rng.integers(1, 300)) * rng.uniform(0.1, 8)).astype(np.float32)
    temperature = float(rng.uniform(0.2, 2.0))
    top_k = None if seed % 3 == 0 else int(rng.integers(1, 50))
    top_p = None if seed % 4 == 0 else float(rng.uniform(0.05, 1.0))
    ours = sampling.candidates(array.array("f", logits.tobytes()), temperature, top_k, top_p)
    ids, probs = numpy_candidates(logits, temperature, top_k, top_p)
    assert [t for t, _ in ours] == ids.tolist()
    np.testing.assert_allclose([p for _, p in ours], probs, rtol=1e-9, atol=1e-12)


def test_argmax_first_on_ties_like_numpy():
    rng = np.random.default_rng(3)
    for _ in range(50):
        x = rng.integers(-3, 3, size=int(rng.integers(1, 40))).astype(np.float32)
        assert sampling.argmax(x.tolist()) == int(np.argmax(x))
    assert sampling.choose([0.5, 2.0, 2.0], random.Random(0)) == 1


def test_sample_frequencies_follow_the_distribution():
    logits = [2.0, 1.0, 0.5, -1.0, 0.0]
    _, probs = numpy_candidates(logits, 0.8, None, None)
    order, _ = numpy_candidates(logits, 0.8, None, None)
    rng = random.Random(42)
    n = 20000
    counts = np.zeros(len(logits))
    for _ in range(n):
        counts[sampling.sample(logits, rng, temperature=0.8)] += 1
    expected = np.zeros(len(logits))
    expected[order] = probs
    # 5 sigma of a binomial count
    assert np.all(np.abs(counts / n - expected) < 5 * np.sqrt(expected * (1 - expected) / n) + 1e-9)


def test_seed_fixes_the_draws_and_filters_hold():
    logits = [float(i % 7) for i in range(100)]
    a = [sampling.sample(logits, random.Random(5), temperature=1.3, top_k=10) for _ in range(3)]
    b = [sampling.sample(logits, random.Random(5), temperature=1.3, top_k=10) for _ in range(3)]
    assert a == b
    rng = random.Random(1)
    allowed = {t for t, _ in sampling.candidates(logits, 1.0, 3, None)}
    assert all(sampling.sample(logits, rng, top_k=3) in allowed for _ in range(200))
    assert sampling.candidates([0.0, 10.0, 0.0], 1.0, None, 0.5) == [(1, 1.0)]


def test_bad_parameters_are_typed():
    for kwargs in ({"temperature": -1}, {"top_k": 0}, {"top_p": 0.0}, {"top_p": 1.5}):
        with pytest.raises(InputError):
            sampling.sample([1.0, 2.0], random.Random(0), **{"temperature": 1.0, **kwargs})
    with pytest.raises(InputError):
        sampling.argmax([])
