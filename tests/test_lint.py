"""ruff (config in pyproject.toml) over the package, tests and benchmarks."""

import shutil
import subprocess
from pathlib import Path

import pytest


def test_sources_pass_the_linter():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install '.[test]')")
    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([ruff, "check", "pkg", "tests", "bench", "playwright.config.py"],
                          cwd=root, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout
