"""Load the browser launch options from `playwright.config.py`, or built-in defaults.

The file is looked up in the current directory, then at the repository root (found
relative to this source file); a CLI installed from a wheel uses the defaults below,
which must stay identical to the repository's playwright.config.py.
"""

from __future__ import annotations

import os
import runpy
import shutil
from pathlib import Path

CONFIG_NAME = "playwright.config.py"
REPO_ROOT = Path(__file__).resolve().parents[3]  # pkg/pte_webgpu/chromium/config.py


def _builtin_namespace() -> dict:
    chromium = os.environ.get("PTE_WEBGPU_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
    launch_args = ["--enable-unsafe-webgpu"]

    def launch_options():
        return {"executable_path": chromium, "args": list(launch_args), "headless": True}

    return {"CHROMIUM": chromium, "LAUNCH_ARGS": launch_args, "TIMEOUT_MS": 60_000,
            "launch_options": launch_options}


def find_config_file() -> Path | None:
    for folder in (Path.cwd(), REPO_ROOT):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


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
