"""A new user's path: `pip install` of the built wheel into a fresh venv (no system site
packages, no source tree on sys.path), then `pte-webgpu run` and `serve` from another
folder. The dist goes to the user cache, built from the installed package."""

import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from pte_webgpu.chromium import dist

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wheel")
    # setuptools builds in-tree under build/lib and never prunes it: a module deleted
    # since the last build would still ship. Start clean.
    for leftover in [REPO / "build" / "lib", *(REPO / "build").glob("bdist.*")]:
        shutil.rmtree(leftover, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO), "-w", tmp / "w"],
                   check=True, timeout=600)
    # The venv sees none of our PYTHON* variables: with PYTHONPATH=pkg its pip would take
    # the checkout's pkg/*.egg-info for an installed pte-webgpu and skip the wheel.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "PTE_WEBGPU_DIST"))}
    subprocess.run([sys.executable, "-m", "venv", tmp / "venv"], check=True, timeout=300, env=env)
    wheel = next((tmp / "w").glob("pte_webgpu-*.whl"))
    subprocess.run([tmp / "venv" / "bin" / "python", "-m", "pip", "install", "-q", wheel,
                    "playwright==1.65.2"], check=True, timeout=600, env=env)
    cache = tmp / "cache"
    # The Pyodide core tarball, as npm would fetch it (saves the download here).
    (cache / "npm").mkdir(parents=True)
    tarball = REPO / "build" / "npm" / f"pyodide-{dist.PYODIDE_VERSION}.tgz"
    if tarball.is_file():
        shutil.copy(tarball, cache / "npm")
    work = tmp / "elsewhere"
    work.mkdir()
    for suffix in (".pte", ".npz"):
        shutil.copy(FIXTURES / f"add_2x3x4{suffix}", work)
    env["PTE_WEBGPU_CACHE"] = str(cache)
    return tmp / "venv" / "bin", work, env, cache


def test_the_package_comes_from_the_venv_not_the_source_tree(installed):
    bin_dir, work, env, _ = installed
    where = subprocess.run([bin_dir / "python", "-c", "import pte_webgpu; print(pte_webgpu.__file__)"],
                           cwd=work, env=env, capture_output=True, text=True, check=True).stdout
    assert str(bin_dir.parent) in where and str(REPO) not in where


def test_run_from_an_installed_wheel(installed):
    bin_dir, work, env, cache = installed
    done = subprocess.run([bin_dir / "pte-webgpu", "run", "add_2x3x4.pte", "--inputs", "add_2x3x4.npz",
                           "--output", "out.npz"], cwd=work, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert (cache / "pyodide-dist" / "pyodide-lock.json").is_file()
    np.testing.assert_array_equal(np.load(work / "out.npz")["out0"],
                                  np.load(work / "add_2x3x4.npz")["out0"])


def test_serve_from_an_installed_wheel(installed):
    bin_dir, work, env, _ = installed
    proc = subprocess.Popen([bin_dir / "pte-webgpu", "serve", "--port", "0", "--quiet"], cwd=work,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line.startswith("pte-webgpu demo: http://127.0.0.1:"), (line, proc.stderr.read())
        url = line.split()[2]
        for path in ("index.html", "app.js", "console.html", "pyodide/pyodide-lock.json",
                     "pyodide/pyodide.asm.wasm"):
            with urllib.request.urlopen(url + path, timeout=10) as response:
                assert response.status == 200, path
        with pytest.raises(urllib.error.HTTPError, match="404"):  # a wheel has no fixtures
            urllib.request.urlopen(url + "fixtures/index.json", timeout=10)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
