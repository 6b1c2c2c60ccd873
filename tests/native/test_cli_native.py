"""`pte-webgpu run --backend native`: quiet stderr, outN compared, progress per step."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def run_native(*args, env=None):
    return subprocess.run([sys.executable, "-m", "pte_webgpu", "run", *map(str, args),
                           "--backend", "native"], capture_output=True, text=True, timeout=300,
                          env=env)


def test_no_xdg_runtime_dir_noise_and_progress_per_step():
    env = {k: v for k, v in os.environ.items() if k != "XDG_RUNTIME_DIR"}
    name = FIXTURES / "add_2x3x4"
    done = run_native(f"{name}.pte", "--inputs", f"{name}.npz", env=env)
    assert done.returncode == 0, done.stderr
    assert "XDG_RUNTIME_DIR" not in done.stderr
    for step in ("creating the WebGPU device", "loading the program", "executing 1 time"):
        assert step in done.stderr
    assert "out0: float32[2, 3, 4]  max abs error vs out0 of the inputs file: 0" in done.stdout
    quiet = run_native(f"{name}.pte", "--inputs", f"{name}.npz", "--quiet", env=env)
    assert quiet.returncode == 0 and quiet.stderr == ""
