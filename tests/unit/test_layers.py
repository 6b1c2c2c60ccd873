"""docs/ARCHITECTURE.md's floors hold: a part of the package imports only parts below it,
and every part is placed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.import_graph import GRAPH, MODULES

# Top to bottom, as docs/ARCHITECTURE.md draws them.
ORDER = ["__main__", "app", "export", "llm", "chromium", "pte_webgpu", "reference", "runtime",
         "ops", "shaders", "gpu", "formats", "model", "errors"]  # "pte_webgpu": the package's __init__.py
DOC = Path(__file__).resolve().parents[2] / "docs" / "ARCHITECTURE.md"


def part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "pte_webgpu"


def test_every_part_is_placed():
    assert {part(m) for m in GRAPH} <= set(ORDER)


def test_imports_point_down():
    rank = {name: i for i, name in enumerate(ORDER)}
    up = sorted((a, b) for a, deps in GRAPH.items() for b in deps
                if part(a) != part(b)
                and rank[part(b)] < rank[part(a)])
    assert not up, f"imports pointing up the floors: {up}"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if "." in m))
def test_the_doc_names_every_module(module):
    """A module as ``name.py``, a package as ``name/``."""
    name = module.rsplit(".", 1)[-1]
    written = f"{name}/" if MODULES[module].name == "__init__.py" else f"{name}.py"
    assert re.search(rf"(?<![\w.]){re.escape(written)}", DOC.read_text()), module
