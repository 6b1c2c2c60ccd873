"""A short deterministic fuzz run inside pytest (the long run: python -m tests.fuzz.run)."""

from __future__ import annotations

from collections import Counter

import pytest

from .harness import case_rng, run_case
from .mutations import load_targets

CASES = 3000
SEED = 20260801


@pytest.mark.fuzz
def test_short_fuzz_run():
    targets = load_targets()
    assert len(targets) == 24
    outcomes = Counter()
    escapes = []
    for i in range(CASES):
        rng = case_rng(SEED, i)
        r = run_case(rng, targets[i % len(targets)])
        outcomes[r.outcome] += 1
        if r.escaped:
            escapes.append(f"case {i} ({r.description}): {r.outcome}\n{r.detail}")
    assert not escapes, "\n\n".join(escapes[:5])
    # the mutations must really reach both outcomes, or the run proves nothing
    assert outcomes["ok"] > 0 and outcomes["FormatError"] > CASES // 10, outcomes


def test_unmutated_fixtures_parse():
    from .harness import parse

    for t in load_targets():
        parse(t.pte, t.ptds)
