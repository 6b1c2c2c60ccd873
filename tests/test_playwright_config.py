"""The CLI installed from a wheel uses built-in launch options: they must match
playwright.config.py at the repository root."""

import runpy
from pathlib import Path

from pte_webgpu.chromium import config


def test_builtin_defaults_match_playwright_config():
    from_file = runpy.run_path(str(Path(__file__).resolve().parents[1] / "playwright.config.py"))
    builtin = config._builtin_namespace()
    for name in ("CHROMIUM", "LAUNCH_ARGS", "TIMEOUT_MS"):
        assert builtin[name] == from_file[name], name
    assert builtin["launch_options"]() == from_file["launch_options"]()

