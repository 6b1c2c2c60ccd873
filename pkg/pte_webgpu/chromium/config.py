"""Browser launch options: built in here, or a source checkout's playwright.config.py.

Never read from the current directory: a file of that name where a user stands is
not ours to execute. An installed wheel uses the defaults below, which must stay
identical to the repository's playwright.config.py (tests/test_playwright_config.py).
"""

from __future__ import annotations

import os
import runpy
import shutil
from pathlib import Path

from . import paths

CONFIG_NAME = "playwright.config.py"


def _builtin_namespace() -> dict:
    chromium = os.environ.get("PTE_WEBGPU_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    launch_args = ["--enable-unsafe-webgpu"]

    def launch_options():
        return {"executable_path": chromium, "args": list(launch_args), "headless": True}

    return {"CHROMIUM": chromium, "LAUNCH_ARGS": launch_args, "TIMEOUT_MS": 60_000,
            "launch_options": launch_options}


def find_config_file() -> Path | None:
    """playwright.config.py at the root of the checkout this package runs from, if any."""
    root = paths.source_checkout()
    candidate = root / CONFIG_NAME if root else None
    return candidate if candidate and candidate.is_file() else None


def load_config() -> dict:
    """Namespace with CHROMIUM, LAUNCH_ARGS, TIMEOUT_MS and launch_options()."""
    path = find_config_file()
    namespace = runpy.run_path(str(path)) if path else _builtin_namespace()
    namespace.setdefault("__file__", str(path) if path else "<built-in>")
    return namespace


def launch_options() -> dict:
    return load_config()["launch_options"]()


def default_timeout_ms() -> int:
    return int(load_config()["TIMEOUT_MS"])
