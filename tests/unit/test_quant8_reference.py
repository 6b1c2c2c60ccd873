"""The CPU reference (pte_webgpu.reference, pure Python) runs the 8-bit fixtures
(tests/fixtures/quant8) and matches eager torch as the GPU must (tests/support/quant8.py:
1e-4, or one quantum at a rounding tie of a quantized output)."""

import numpy as np
import pytest
from pte_webgpu import reference
from pte_webgpu.formats import open_program

from tests.support.quant8 import INDEX, NAMES, QUANT8, TIE, int8_output


@pytest.mark.parametrize("name", [n for n in NAMES if not int8_output(n)])
def test_reference_matches_torch(name):
    program = open_program((QUANT8 / f"{name}.pte").read_bytes())
    arrays = np.load(QUANT8 / f"{name}.npz")
    for k in range(INDEX[name]["steps"]):
        got = reference.run_program(program, [arrays[f"step{k}_in0"]])[0].numpy()
        want = arrays[f"step{k}_out0"]
        off = np.abs(got - want) > INDEX[name]["tolerance"]
        if off.any():
            tie = arrays[f"step{k}_tie0"]  # only quantized outputs may differ, at ties
            assert np.all(np.abs(np.abs(tie - np.trunc(tie))[off] - 0.5) < TIE), (name, k)
            assert off.sum() <= 2, (name, k)
