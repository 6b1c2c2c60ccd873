"""How ops are defined: no import circle in the package, a registry that imports no op
family, and each elementwise op named in one place (its table line)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from pte_webgpu.ops import binary, registry, unary
from pte_webgpu.shaders import compose

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"pte_webgpu": ROOT / "pkg" / "pte_webgpu", "pte_webgpu.shaders": ROOT / "shaders"}


def _modules() -> dict[str, Path]:
    out = {}
    for prefix, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("").parts
            if "_generated" in rel:
                continue
            name = ".".join((prefix,) + rel)
            out[name.removesuffix(".__init__")] = path
    return out


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """Modules of the package that ``name`` imports (anywhere in the file)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[:len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base
                       for a in node.names]
        else:
            continue
        found.update(t for t in targets if t in MODULES and t != name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def test_the_import_graph_was_read():
    assert "pte_webgpu.ops.unary" in GRAPH["pte_webgpu.ops"]
    assert "pte_webgpu.ops.registry" in GRAPH["pte_webgpu.ops.unary"]
    assert "pte_webgpu.shaders.compose" in GRAPH["pte_webgpu.ops.unary"]


def test_no_import_circle_in_the_package():
    state: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(name, path):
        state[name] = 1
        for dep in sorted(GRAPH[name]):
            if state.get(dep) == 1:
                pytest.fail("import circle: " + " -> ".join(path[path.index(dep):] + [dep]))
            if dep not in state:
                visit(dep, path + [dep])
        state[name] = 2

    for name in sorted(GRAPH):
        if name not in state:
            visit(name, [name])


def test_the_registry_imports_no_op_family():
    assert not {m for m in GRAPH["pte_webgpu.ops.registry"] if m.startswith("pte_webgpu.ops")}
    importers = {n for n, deps in GRAPH.items() if "pte_webgpu.ops.unary" in deps}
    # view uses round_to_half; the fused chain runs the table's rows
    assert importers <= {"pte_webgpu.ops", "pte_webgpu.ops.view", "pte_webgpu.ops.fused_elementwise"}


NEW_OPS = ["aten.sin.default", "aten.cos.default", "aten.log.default", "aten.round.default",
           "aten.floor.default", "aten.ceil.default", "aten.sign.default",
           "aten.reciprocal.default", "aten.hardswish.default", "aten.hardsigmoid.default",
           "aten.silu.default", "aten.leaky_relu.default", "aten.minimum.default",
           "aten.maximum.default"]


@pytest.mark.parametrize("name", NEW_OPS)
def test_an_elementwise_op_is_named_in_one_file(name):
    files = [p for p in list((ROOT / "pkg").rglob("*.py")) + list((ROOT / "shaders").rglob("*"))
             if p.is_file() and re.search(re.escape(name.rsplit(".", 1)[0]) + r"(?!\w)",
                                          p.read_text(errors="ignore"))]
    assert [p.name for p in files] in (["unary.py"], ["binary.py"])
    d = registry.find(name)
    assert d is not None and d.reference is not None and d.half


@pytest.mark.parametrize("family", [unary, binary])
def test_the_shader_switch_is_generated_from_the_table(family):
    text = compose.shader_source(family.KERNEL.name)
    for code, row in enumerate(family.TABLE):
        assert f"case {code}u: {{ return {row.wgsl}; }}" in text


def test_uniform_struct_and_packing_agree():
    u = compose.Uniform(("n", "u32"), ("x", "f32"), ("shape", "vec8"), ("k", "u32"))
    text = u.wgsl()
    assert text.index("n: u32") < text.index("x: f32") < text.index("_pad8: u32") \
        < text.index("shape: array<vec4<u32>, 2>") < text.index("k: u32")
    data = u.pack(n=3, x=0.5, shape=[2, 3], k=7)
    assert len(data) == 64 and data[:8] == b"\x03\0\0\0\0\0\0\x3f"
    assert data[16:24] == b"\x02\0\0\0\x03\0\0\0" and data[48:52] == b"\x07\0\0\0"
    with pytest.raises(ValueError, match="no field"):
        u.pack(m=1)
