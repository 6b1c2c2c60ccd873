"""``pte-webgpu run`` with stepwise inputs (stepK_inJ): one method, state kept between
steps, in headless Chromium."""

import subprocess
import sys

import numpy as np
import pytest

from tests.support.decoders import DECODERS, INDEX

pytestmark = pytest.mark.browser


def test_run_steps_in_the_browser(tmp_path, pyodide_dist):
    name = "llama_dynamic_rope"
    out = tmp_path / "out.npz"
    done = subprocess.run([sys.executable, "-m", "pte_webgpu", "run", DECODERS / f"{name}.pte",
                           "--inputs", DECODERS / f"{name}.npz", "--output", out],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got, want = np.load(out), np.load(DECODERS / f"{name}.npz")
    steps = INDEX[name]["steps"]
    assert sorted(got.files) == sorted(f"step{k}_out0" for k in range(steps))
    for k in range(steps):
        np.testing.assert_allclose(got[f"step{k}_out0"], want[f"step{k}_out0"], atol=1e-4)
