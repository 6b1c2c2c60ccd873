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
                   "unknown_tensor": "UnsupportedError", "qwen2": "ok", "qwen3": "ok",
                   "llama_rope_freqs": "ok", "phi3": "ok"}


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


def test_an_array_claiming_more_items_than_the_file_holds_is_refused_quickly(seeds, tmp_path):
    """gguf's reader alone loops on it, each missing item an empty view (memory grows until
    the alarm); the bounds walk refuses it naming the key, before gguf reads anything."""
    import gguf
    from pte_webgpu.errors import FormatError
    from pte_webgpu.export import gguf_llama

    base = next(s for s in seeds if s.name == "base")
    path = tmp_path / "base.gguf"
    path.write_bytes(base.data)
    f = gguf.GGUFReader(str(path)).fields["tokenizer.ggml.token_type"]
    count_at = f.offset + sum(int(p.nbytes) for p in f.parts[:4])  # key len, key, type, item type
    data = bytearray(base.data)
    data[count_at:count_at + 8] = (1 << 40).to_bytes(8, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError, match="tokenizer.ggml.token_type") as err:
        gguf_llama.open_gguf(path)
    assert "cannot fit" in str(err.value)
