"""The CPU reference interpreter (pure Python, float64, each op's reference from its one
definition) on the exported pooling, normalization, resampling and padding programs,
against eager torch: the references follow torch's index and rounding rules."""

import numpy as np
import pytest
from pte_webgpu import formats
from pte_webgpu.reference import interpreter as reference

from tests.support.vision_fixtures import NAMES, VISION, check_outputs


@pytest.mark.parametrize("name", NAMES)
def test_reference_matches_torch(name):
    program = formats.open_program((VISION / f"{name}.pte").read_bytes())
    ref = np.load(VISION / f"{name}.npz")
    inputs = [ref[f"in{k}"] for k in range(sum(f.startswith("in") for f in ref.files))]
    got = reference.run_program(program, inputs)
    check_outputs(name, [np.frombuffer(t.tobytes(), t.dtype.name).reshape(t.shape) for t in got])
