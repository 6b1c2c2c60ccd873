"""A short deterministic GGUF fuzz run inside pytest (the long one: make fuzz-gguf)."""

from __future__ import annotations

from collections import Counter

import pytest

pytest.importorskip("gguf")

from . import gguf_harness  # noqa: E402

CASES = 2000
SEED = 20261201


@pytest.fixture(scope="module")
def seeds(tmp_path_factory):
    return gguf_harness.load_seeds(tmp_path_factory.mktemp("gguf-seeds"))


def test_seeds_read_as_written(seeds, tmp_path):
    """The unmutated base seed reads through; each broken variant gives its typed error."""
    runner = gguf_harness.Runner(tmp_path)
    try:
        got = {s.name: runner.run(s.name, s.data).outcome for s in seeds}
    finally:
        runner.close()
    assert got == {"base": "ok", "zero_heads": "FormatError", "missing_key": "FormatError",
                   "string_number": "FormatError", "wrong_shape": "FormatError",
                   "unknown_tensor": "UnsupportedError"}


@pytest.mark.fuzz
def test_short_gguf_fuzz_run(seeds, tmp_path):
    runner = gguf_harness.Runner(tmp_path)
    outcomes, escapes = Counter(), []
    try:
        for i in range(CASES):
            description, data = gguf_harness.mutate(gguf_harness.case_rng(SEED, i), seeds[i % len(seeds)])
            r = runner.run(description, data)
            outcomes[r.outcome] += 1
            if r.escaped:
                escapes.append(f"case {i} ({description}): {r.outcome}\n{r.detail}")
    finally:
        runner.close()
    assert not escapes, "\n\n".join(escapes[:5])
    # the mutants must reach both ends, or the run proves nothing
    assert outcomes["ok"] > 0 and outcomes["FormatError"] > CASES // 2, outcomes
