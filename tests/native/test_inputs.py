"""Every input form of tests/input_cases.py through real exported programs on the GPU:
add_2x3x4 (x + y, float32) and embedding_100x16_2x5 (int64 ids). The right answer
(torch's, from the reference values), or an InputError that names the input and what
was wrong; no buffer is left behind either way."""

import numpy as np
import pte_webgpu
import pytest

from tests.support.fixture_index import FIXTURES
from tests.support.input_cases import CONTAINER_CASES, FLOAT_CASES, INT_CASES, SHAPE
from tests.support.gpu_thread import run_sync

REF = np.random.default_rng(7).standard_normal(SHAPE).astype(np.float32)
REF.reshape(-1)[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]
ONES = np.ones(SHAPE, np.float32)


class Loaded:
    """One program loaded for the module; ``run`` executes it on the GPU thread."""

    def __init__(self, runtime, path):
        self.runtime = runtime
        self.program = run_sync(runtime.load_program((FIXTURES / path).read_bytes()))
        self.method = self.program.load_method()

    def run(self, inputs):
        return run_sync(self.method.execute(inputs))


@pytest.fixture(scope="module")
def add(runtime):
    loaded = Loaded(runtime, "add_2x3x4.pte")
    yield loaded
    loaded.program.close()


@pytest.fixture(scope="module")
def embedding(runtime):
    loaded = Loaded(runtime, "extra/embedding_100x16_2x5.pte")
    yield loaded
    loaded.program.close()


def _expect(loaded, inputs, expect, want):
    live = loaded.runtime.device.live_buffer_count
    if expect == "ok":
        (got,) = loaded.run(inputs)
        np.testing.assert_array_equal(got, want)
    else:
        with pytest.raises(pte_webgpu.InputError, match=expect):
            loaded.run(inputs)
    assert loaded.runtime.device.live_buffer_count == live


@pytest.mark.parametrize("case", FLOAT_CASES, ids=[c[0] for c in FLOAT_CASES])
def test_float_input_forms_on_the_gpu(add, case):
    _, make, expect = case
    _expect(add, [make(REF), ONES], expect, REF + ONES)


@pytest.mark.parametrize("case", INT_CASES, ids=[c[0] for c in INT_CASES])
def test_int64_input_forms_on_the_gpu(embedding, case):
    _, make, expect = case
    ref = np.load(FIXTURES / "extra" / "embedding_100x16_2x5.npz")
    _expect(embedding, [make(ref["in0"])], expect, ref["out0"])


@pytest.mark.parametrize("case", CONTAINER_CASES, ids=[c[0] for c in CONTAINER_CASES])
def test_the_inputs_container_on_the_gpu(add, case):
    _expect(add, case[1](REF), case[2], None)


def test_big_endian_input_gives_torchs_answer_not_misread_bytes(add):
    """A big-endian input: a '>f4' array once ran and came back off by up to 2e37."""
    x = np.random.default_rng(8).standard_normal(SHAPE).astype(">f4")
    (got,) = add.run([x, x])
    np.testing.assert_array_equal(got, (x.astype(np.float32) * 2))
