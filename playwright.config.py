"""Browser launch options shared by the browser tests and the `pte-webgpu` CLI.

Not importable by name (the dot): pte_webgpu.chromium.config loads it with
runpy.run_path and falls back to identical built-in defaults when it is absent.
"""

import os
import shutil

# The system Chromium: `playwright install` cannot download browsers offline.
CHROMIUM = os.environ.get("PTE_WEBGPU_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"

# Headless Chromium exposes a WebGPU adapter (SwiftShader) only with this flag.
LAUNCH_ARGS = ["--enable-unsafe-webgpu"]

# Default Playwright timeout for page actions (ms); booting Pyodide takes 4-6 s.
TIMEOUT_MS = 60_000


def launch_options():
    """Keyword arguments for playwright's `chromium.launch(**...)`."""
    return {"executable_path": CHROMIUM, "args": list(LAUNCH_ARGS), "headless": True}
