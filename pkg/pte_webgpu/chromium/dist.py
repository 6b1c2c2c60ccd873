"""Build the local, offline Pyodide distribution that the browser pages load.

Layout (defaults): build/npm/pyodide-<v>.tgz (cached npm tarball), build/wheels/
(our wheel + flatbuffers), build/.venv-lock (Python 3.12 venv with the lockfile tool),
build/web/pyodide/ (core files, wheels and the regenerated pyodide-lock.json).
`python -m pte_webgpu.chromium.dist [--out DIR]` builds it and prints each step.
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

PYODIDE_VERSION = "314.0.7"
FLATBUFFERS = "flatbuffers==25.12.19"
# Tried in order: the light lockfile tool, then the full pyodide-build (same command).
LOCK_TOOLS = ["pyodide-lock[cli,wheel]==0.2.1", "pyodide-build"]
CORE_FILES = ["pyodide.mjs", "pyodide.js", "pyodide.asm.mjs", "pyodide.asm.wasm",
              "python_stdlib.zip", "package.json"]
# Fixed wheel timestamps make our wheel byte-identical while the sources are unchanged,
# so the lockfile is only regenerated when something really changed.
REPRODUCIBLE_EPOCH = "315532800"
REPO_ROOT = Path(__file__).resolve().parents[3]


def _run(cmd: list, log, **kwargs) -> None:
    log("  $ " + " ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, **kwargs)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _copy_if_changed(src: Path, dst: Path) -> bool:
    if dst.is_file() and dst.stat().st_size == src.stat().st_size and _sha256(dst) == _sha256(src):
        return False
    shutil.copyfile(src, dst)
    return True


def npm_tarball(build: Path, log) -> Path:
    folder = build / "npm"
    tarball = folder / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tarball.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        _run(["npm", "pack", f"pyodide@{PYODIDE_VERSION}", "--pack-destination", folder,
              "--loglevel=error"], log, stdout=subprocess.DEVNULL)
    return tarball


def extract_core(tarball: Path, out: Path, build: Path, log) -> Path:
    """Unpack the tarball once; copy the core files to `out`. Returns the pristine lock."""
    unpacked = build / "npm" / f"pyodide-{PYODIDE_VERSION}"
    if not (unpacked / "pyodide-lock.json").is_file():
        with tarfile.open(tarball) as tar:
            # npm tarballs nest everything under package/; keep the safe "data" filter.
            strip = lambda member, path: tarfile.data_filter(  # noqa: E731
                member.replace(name=member.name.removeprefix("package/")), path)
            tar.extractall(unpacked, filter=strip)
    out.mkdir(parents=True, exist_ok=True)
    copied = [n for n in CORE_FILES if _copy_if_changed(unpacked / n, out / n)]
    log(f"pyodide {PYODIDE_VERSION} core: " + (f"copied {', '.join(copied)}" if copied else "up to date"))
    return unpacked / "pyodide-lock.json"


def build_wheels(root: Path, wheels: Path, log) -> list[Path]:
    """Rebuild our wheel (sources change) and fetch flatbuffers once."""
    wheels.mkdir(parents=True, exist_ok=True)
    for stale in wheels.glob("pte_webgpu-*.whl"):
        stale.unlink()
    # setuptools builds in-tree under build/lib and never prunes it: a deleted module
    # would still ship. Start from a clean slate.
    for leftover in [root / "build" / "lib", *(root / "build").glob("bdist.*")]:
        shutil.rmtree(leftover, ignore_errors=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": REPRODUCIBLE_EPOCH}
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", wheels, root], log, env=env)
    fb_name, fb_version = FLATBUFFERS.split("==")
    if not list(wheels.glob(f"{fb_name}-{fb_version}-*.whl")):
        _run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
              "-d", wheels, FLATBUFFERS], log)
    return sorted(wheels.glob("pte_webgpu-*.whl")) + sorted(wheels.glob(f"{fb_name}-{fb_version}-*.whl"))


def find_python312() -> str:
    """An interpreter >= 3.12, which the lockfile tools require."""
    if sys.version_info >= (3, 12):
        return sys.executable
    pyenv = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates = [os.environ.get("PTE_WEBGPU_PYTHON312"),
                  *sorted(glob.glob(f"{pyenv}/versions/3.12*/bin/python3")),
                  *sorted(glob.glob(f"{pyenv}/versions/3.1[3-9]*/bin/python3")),
                  shutil.which("python3.12"), shutil.which("python3.13")]
    for candidate in filter(None, candidates):
        # pyenv shims exist on PATH even when they cannot run: check by running.
        probe = subprocess.run([candidate, "-c", "import sys; assert sys.version_info >= (3, 12)"],
                               capture_output=True)
        if probe.returncode == 0:
            return candidate
    raise RuntimeError("need Python >= 3.12 for the Pyodide lockfile tool; set PTE_WEBGPU_PYTHON312")


def lock_tool(build: Path, log) -> Path:
    """The `pyodide` CLI (with the `lockfile` command) from build/.venv-lock."""
    venv = build / ".venv-lock"
    cli = venv / "bin" / "pyodide"
    if cli.is_file():
        return cli
    _run([find_python312(), "-m", "venv", "--clear", venv], log)
    for requirement in LOCK_TOOLS:
        try:
            _run([venv / "bin" / "python", "-m", "pip", "install", "-q", requirement], log)
            return cli
        except subprocess.CalledProcessError:
            log(f"  could not install {requirement}, trying the next tool")
    raise RuntimeError(f"could not install any of {LOCK_TOOLS} into {venv}")


def write_lock(base_lock: Path, wheels: list[Path], out: Path, build: Path, log) -> None:
    """Regenerate out/pyodide-lock.json from the pristine lock plus our wheels."""
    stamp = out / ".lock-inputs.json"
    inputs = {p.name: _sha256(p) for p in [base_lock, *wheels]}
    lock = out / "pyodide-lock.json"
    if lock.is_file() and stamp.is_file() and json.loads(stamp.read_text()) == inputs:
        log("pyodide-lock.json: up to date")
        return
    _run([lock_tool(build, log), "lockfile", "add-wheels", "--input", base_lock, "--output", lock,
          "--base-path", out, *wheels], log, stdout=subprocess.DEVNULL)
    stamp.write_text(json.dumps(inputs, indent=1))
    log(f"pyodide-lock.json: regenerated with {', '.join(inputs)}")


def ensure_dist(root: Path | None = None, out: Path | None = None, log=print) -> Path:
    """Build (or refresh) the local Pyodide dist; returns its folder (the indexURL)."""
    root = Path(root or REPO_ROOT).resolve()
    build = root / "build"
    out = Path(out or os.environ.get("PTE_WEBGPU_DIST") or build / "web" / "pyodide").resolve()
    base_lock = extract_core(npm_tarball(build, log), out, build, log)
    wheels = build_wheels(root, build / "wheels", log)
    for stale in out.glob("*.whl"):
        if stale.name not in {w.name for w in wheels}:
            stale.unlink()
    copied = [w.name for w in wheels if _copy_if_changed(w, out / w.name)]
    log("wheels: " + (f"copied {', '.join(copied)}" if copied else "up to date"))
    write_lock(base_lock, [out / w.name for w in wheels], out, build, log)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=None, help="repository root (default: this checkout)")
    parser.add_argument("--out", type=Path, default=None, help="dist folder (default: build/web/pyodide)")
    args = parser.parse_args(argv)
    print(f"dist ready: {ensure_dist(args.root, args.out)}")


if __name__ == "__main__":
    main()
