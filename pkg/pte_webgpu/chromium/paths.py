"""Where things live: a source checkout (pyproject.toml two levels above the package) or
an installed wheel (the web pages inside the package, built files in a user cache)."""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # .../pte_webgpu


def source_checkout() -> Path | None:
    """The repository root when this package runs from a checkout (pkg/pte_webgpu), else None."""
    root = _PACKAGE.parents[1]
    if _PACKAGE.parent.name == "pkg" and (root / "pyproject.toml").is_file():
        return root
    return None


def cache_dir() -> Path:
    """Per-user cache: $PTE_WEBGPU_CACHE, else $XDG_CACHE_HOME/pte-webgpu, else ~/.cache/pte-webgpu."""
    explicit = os.environ.get("PTE_WEBGPU_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pte-webgpu"


def build_dir() -> Path:
    """build/ of the checkout, else the user cache: npm tarball, dist."""
    root = source_checkout()
    return root / "build" if root else cache_dir()


def web_root() -> Path:
    """The demo pages: web/ of the checkout, else pte_webgpu/web inside the wheel."""
    root = source_checkout()
    return root / "web" if root else _PACKAGE / "web"


def fixtures_root() -> Path | None:
    """tests/fixtures of a checkout (the page's bundled examples); a wheel has none."""
    root = source_checkout()
    folder = root / "tests" / "fixtures" if root else None
    return folder if folder and (folder / "index.json").is_file() else None
