"""The Pyodide dist is built once per set of inputs (content hashes), from the installed
packages, and its lock lists exactly the wheels it ships."""

import hashlib
import json
import time
import zipfile

import pytest
from pte_webgpu.chromium import dist


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("dist")
    lines = []
    dist.ensure_dist(out=out, log=lines.append)
    assert any("building" in line for line in lines)
    return out


def test_second_call_reuses_the_dist_without_work(built):
    before = {p.name: p.stat().st_mtime_ns for p in built.iterdir()}
    lines = []
    started = time.perf_counter()
    assert dist.ensure_dist(out=built, log=lines.append) == built
    assert time.perf_counter() - started < 1.0 and lines == []
    assert {p.name: p.stat().st_mtime_ns for p in built.iterdir()} == before


def test_a_changed_package_file_rebuilds_only_the_wheel(built, tmp_path, monkeypatch):
    extra = tmp_path / "extra.py"
    extra.write_text("X = 1\n")
    original = dist.package_wheel

    def with_extra():
        wheel = original()
        wheel.files["pte_webgpu/extra.py"] = extra
        return wheel

    monkeypatch.setattr(dist, "package_wheel", with_extra)
    wasm = (built / "pyodide.asm.wasm").stat().st_mtime_ns
    lines = []
    dist.ensure_dist(out=built, log=lines.append)
    assert lines and (built / "pyodide.asm.wasm").stat().st_mtime_ns == wasm
    with zipfile.ZipFile(next(built.glob("pte_webgpu-*.whl"))) as zf:
        assert "pte_webgpu/extra.py" in zf.namelist()
    monkeypatch.setattr(dist, "package_wheel", original)
    dist.ensure_dist(out=built, log=lines.append)  # back to the real package
    with zipfile.ZipFile(next(built.glob("pte_webgpu-*.whl"))) as zf:
        assert "pte_webgpu/extra.py" not in zf.namelist()


def test_the_lock_lists_exactly_what_is_shipped(built):
    lock = json.loads((built / "pyodide-lock.json").read_text())
    shipped = {p.name for p in built.glob("*.whl")}
    assert {e["file_name"] for e in lock["packages"].values()} == shipped
    # no numpy, no micropip
    assert set(lock["packages"]) == {"pte-webgpu", "flatbuffers", "jinja2", "markupsafe"}
    assert lock["packages"]["pte-webgpu"]["depends"] == ["flatbuffers", "jinja2"]
    assert lock["packages"]["jinja2"]["depends"] == ["markupsafe"]
    for entry in lock["packages"].values():
        data = (built / entry["file_name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
    assert lock["info"]["python"].startswith("3.")  # the core's own platform info is kept


def test_our_wheel_holds_the_package_and_its_shaders_but_not_the_pages(built):
    with zipfile.ZipFile(next(built.glob("pte_webgpu-*.whl"))) as zf:
        names = zf.namelist()
        record = zf.read(next(n for n in names if n.endswith(".dist-info/RECORD"))).decode()
    assert "pte_webgpu/__init__.py" in names and "pte_webgpu/runtime/method.py" in names
    assert any(n.startswith("pte_webgpu/shaders/") and n.endswith(".wgsl") for n in names)
    assert not any("__pycache__" in n or n.startswith("pte_webgpu/web/") for n in names)
    assert all(n in record for n in names)


def test_dependencies_ship_as_pure_python(built):
    for name, package in (("jinja2", "jinja2"), ("markupsafe", "markupsafe")):
        with zipfile.ZipFile(next(built.glob(f"{name}-*-py3-none-any.whl"))) as zf:
            names = zf.namelist()
        assert f"{package}/__init__.py" in names
        assert not any(n.endswith((".so", ".c", ".pyd")) for n in names)
    assert "markupsafe/_native.py" in names  # the fallback it imports without _speedups


def test_wheels_are_byte_reproducible(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    wheel = dist.package_wheel()
    assert dist.write_wheel(wheel, a).read_bytes() == dist.write_wheel(wheel, b).read_bytes()


def test_concurrent_callers_build_the_dist_once(tmp_path):
    """Two callers at once (parallel test workers, two `run`s) on a dist not yet built:
    one builds, the other waits for it and finds it built."""
    import threading

    out, lines, results = tmp_path / "dist", [], []
    start = threading.Barrier(2)

    def call():
        start.wait()
        results.append(dist.ensure_dist(out=out, log=lines.append))

    threads = [threading.Thread(target=call) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert results == [out, out]
    assert sum("building" in line for line in lines) == 1, lines
    assert dist.version(out)
