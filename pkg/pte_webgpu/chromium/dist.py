"""The offline Pyodide distribution that the browser pages load, built once per input set.

It holds the Pyodide core files (from the npm tarball), a wheel of the installed
pte_webgpu package and of its pure-Python dependencies as installed (flatbuffers; jinja2
and markupsafe, for chat templates), and a pyodide-lock.json that lists exactly those
wheels: a page asking for any other package (numpy, micropip: no Pyodide build of them
is on PyPI or npm here) gets Pyodide's plain "No known package" / "No module named"
error instead of a 404. Loading pte-webgpu loads its dependencies (the lock's depends).

The wheels are zipped here from the installed files, reproducibly (no pip, no network),
so this works from an installed wheel as well as from a checkout; only ``.py`` files of
the dependencies go in (markupsafe's C speedups are left out: it falls back to its own
pure-Python escaping). A stamp of the content hashes of every input lets later calls
return at once.

Where: build/web/pyodide in a source checkout, else <user cache>/pyodide-dist
(see paths.py); `python -m pte_webgpu.chromium.dist [--out DIR]` builds it.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import fcntl
import hashlib
import importlib.metadata
import importlib.resources
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from pathlib import Path

from ..errors import PteError
from . import paths

PYODIDE_VERSION = "314.0.7"
CORE_FILES = ["pyodide.mjs", "pyodide.js", "pyodide.asm.mjs", "pyodide.asm.wasm",
              "python_stdlib.zip", "package.json"]
STAMP = ".dist-stamp"
# Bump when the layout or the wheel/lock format written here changes.
FORMAT = "2"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)
_SKIP_PARTS = {"__pycache__"}


class DistError(PteError):
    """The Pyodide dist cannot be built (no npm tarball, unreadable package files)."""


class _Wheel:
    """A pure-Python wheel to zip: distribution name, version, files, requirements."""

    def __init__(self, name: str, version: str, files: dict[str, Path], requires=()):
        self.name, self.version, self.files, self.requires = name, version, files, list(requires)
        self.file_name = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"

    def digest(self) -> str:
        h = hashlib.sha256(f"{self.file_name}\n{self.requires}\n".encode())
        for arcname in sorted(self.files):
            h.update(f"{arcname}\n".encode())
            h.update(hashlib.sha256(self.files[arcname].read_bytes()).digest())
        return h.hexdigest()

    def imports(self) -> list[str]:
        return sorted({a.split("/", 1)[0].removesuffix(".py") for a in self.files})


def _tree(folder: Path, prefix: str, skip: set[str] = frozenset()) -> dict[str, Path]:
    """{arcname: path} of every file under folder, without caches and `skip` subfolders."""
    out = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not (set(rel.parts) & _SKIP_PARTS) and rel.parts[0] not in skip \
                and path.suffix != ".pyc":
            out[f"{prefix}/{rel.as_posix()}"] = path
    return out


def package_wheel() -> _Wheel:
    """pte_webgpu as installed (a checkout maps shaders/ in from the repository root).
    The demo pages (web/) are left out: the browser gets them from the server."""
    import pte_webgpu

    package = Path(pte_webgpu.__file__).resolve().parent
    files = _tree(package, "pte_webgpu", skip={"web"})
    shaders = Path(str(importlib.resources.files("pte_webgpu.shaders")))
    files.update(_tree(shaders, "pte_webgpu/shaders"))
    return _Wheel("pte-webgpu", pte_webgpu.__version__, files, ["flatbuffers", "jinja2"])


# the pure-Python packages pte_webgpu needs in the page: (name, import package, requires)
DEPENDENCIES = [("flatbuffers", "flatbuffers", []), ("jinja2", "jinja2", ["markupsafe"]),
                ("markupsafe", "markupsafe", [])]


def installed_wheel(name: str, package: str, requires=()) -> _Wheel:
    """A wheel of the ``.py`` files of the installed distribution ``name``."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise DistError(f"{name} is not installed; the Pyodide dist ships it "
                        f"(pip install {name})") from None
    root = Path(str(dist.locate_file("")))
    files = {f.as_posix(): root / f for f in dist.files or ()
             if f.parts[0] == package and f.suffix == ".py"}
    if not files:
        raise DistError(f"the installed {name} package lists no files to ship to Pyodide")
    return _Wheel(name, dist.version, files, requires)


def dependency_wheels() -> list[_Wheel]:
    return [installed_wheel(*d) for d in DEPENDENCIES]


def flatbuffers_wheel() -> _Wheel:
    return installed_wheel(*DEPENDENCIES[0])


def write_wheel(wheel: _Wheel, out: Path) -> Path:
    """Zip `wheel` into out/<file_name> with fixed dates: same inputs, same bytes."""
    dist_info = f"{wheel.name.replace('-', '_')}-{wheel.version}.dist-info"
    meta = "Metadata-Version: 2.1\nName: {}\nVersion: {}\n{}".format(
        wheel.name, wheel.version, "".join(f"Requires-Dist: {r}\n" for r in wheel.requires))
    extra = {f"{dist_info}/METADATA": meta.encode(),
             f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: pte-webgpu\n"
                                   b"Root-Is-Purelib: true\nTag: py3-none-any\n",
             f"{dist_info}/top_level.txt": "".join(f"{i}\n" for i in wheel.imports()).encode()}
    record = []
    path = out / wheel.file_name
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        entries = [(a, wheel.files[a].read_bytes()) for a in sorted(wheel.files)] + list(extra.items())
        for arcname, data in entries:
            info = zipfile.ZipInfo(arcname, _ZIP_DATE)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arcname},sha256={digest},{len(data)}")
        record.append(f"{dist_info}/RECORD,,")
        info = zipfile.ZipInfo(f"{dist_info}/RECORD", _ZIP_DATE)
        info.external_attr = 0o644 << 16
        zf.writestr(info, "\n".join(record) + "\n")
    return path


def npm_tarball(folder: Path, log) -> Path:
    """pyodide-<v>.tgz in `folder`, fetched once with `npm pack`."""
    tarball = folder / f"pyodide-{PYODIDE_VERSION}.tgz"
    if tarball.is_file():
        return tarball
    if not shutil.which("npm"):
        raise DistError(f"the Pyodide core comes from npm: install npm, or put "
                        f"pyodide-{PYODIDE_VERSION}.tgz (npm pack pyodide@{PYODIDE_VERSION}) in {folder}")
    folder.mkdir(parents=True, exist_ok=True)
    log(f"fetching pyodide@{PYODIDE_VERSION} from npm (once)")
    done = subprocess.run(["npm", "pack", f"pyodide@{PYODIDE_VERSION}", "--pack-destination",
                           str(folder), "--loglevel=error"], capture_output=True, text=True)
    if done.returncode != 0 or not tarball.is_file():
        raise DistError(f"npm pack pyodide@{PYODIDE_VERSION} failed: "
                        f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
    return tarball


def _read_core(tarball: Path) -> dict[str, bytes]:
    """The core files and the pristine lock from the tarball (npm nests them under package/)."""
    wanted = {f"package/{n}": n for n in [*CORE_FILES, "pyodide-lock.json"]}
    found = {}
    with tarfile.open(tarball) as tar:
        for member in tar:
            if member.name in wanted and member.isfile():
                found[wanted[member.name]] = tar.extractfile(member).read()
    missing = sorted(set(wanted.values()) - set(found))
    if missing:
        raise DistError(f"{tarball} lacks {', '.join(missing)}")
    return found


def _lock_entry(wheel: _Wheel, data: bytes) -> dict:
    return {"name": wheel.name, "version": wheel.version, "file_name": wheel.file_name,
            "install_dir": "site", "sha256": hashlib.sha256(data).hexdigest(),
            "package_type": "package", "imports": wheel.imports(),
            "depends": list(wheel.requires), "unvendored_tests": False, "tool": {}}


def default_out() -> Path:
    explicit = os.environ.get("PTE_WEBGPU_DIST")
    if explicit:
        return Path(explicit).resolve()
    root = paths.source_checkout()
    return root / "build" / "web" / "pyodide" if root else paths.cache_dir() / "pyodide-dist"


def ensure_dist(root: Path | None = None, out: Path | None = None, log=print,
                npm_folder: Path | None = None) -> Path:
    """The dist folder (the pages' indexURL), built only when an input changed.

    `root` is accepted for older callers and ignored: the inputs are the installed
    packages. `log` hears about work only (nothing when the dist is up to date)."""
    out = Path(out).resolve() if out else default_out()
    npm_folder = Path(npm_folder) if npm_folder else paths.build_dir() / "npm"
    wheels = [package_wheel(), *dependency_wheels()]
    key = hashlib.sha256(f"{FORMAT} {PYODIDE_VERSION} ".encode()
                         + " ".join(w.digest() for w in wheels).encode()).hexdigest()
    names = [*CORE_FILES, "pyodide-lock.json", *(w.file_name for w in wheels)]
    if _is_built(out, key, names):
        return out
    # One builder at a time (parallel test workers, two `run`s): the others wait here,
    # then find the dist built.
    with _build_lock(out):
        if _is_built(out, key, names):
            return out
        _build(out, key, names, wheels, npm_folder, log)
    return out


def _is_built(out: Path, key: str, names: list[str]) -> bool:
    stamp = out / STAMP
    return stamp.is_file() and stamp.read_text() == key and all((out / n).is_file() for n in names)


@contextlib.contextmanager
def _build_lock(out: Path):
    """An exclusive lock on <out>.lock, beside the dist (not in it: a build removes
    files it does not know)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(out.parent / f"{out.name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _build(out: Path, key: str, names: list[str], wheels: list[_Wheel], npm_folder: Path,
           log) -> None:
    stamp = out / STAMP
    log(f"building the Pyodide dist in {out} (first use, or the package changed)")
    core = _read_core(npm_tarball(npm_folder, log))
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        staged = Path(tmp)
        lock = json.loads(core.pop("pyodide-lock.json"))
        entries = {}
        for wheel in wheels:
            data = write_wheel(wheel, staged).read_bytes()
            entries[wheel.name] = _lock_entry(wheel, data)
        # Only what is shipped: a lock that names absent wheels turns imports into 404s.
        lock["packages"] = entries
        (staged / "pyodide-lock.json").write_text(json.dumps(lock, indent=1, sort_keys=True))
        for name, data in core.items():
            if not (out / name).is_file() or (out / name).read_bytes() != data:
                (staged / name).write_bytes(data)
        for path in staged.iterdir():  # same-folder renames: readers never see half a file
            os.replace(path, out / path.name)
    for stale in out.iterdir():
        if stale.name not in names and stale.name != STAMP and stale.is_file():
            stale.unlink()
    stamp.write_text(key)
    log(f"dist ready: {out}")


def version(out: Path) -> str:
    """The content key of a built dist (its stamp): changes whenever any input does."""
    try:
        return (Path(out) / STAMP).read_text().strip()
    except OSError:
        raise DistError(f"{out} is not a built dist (no {STAMP})") from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None,
                        help="dist folder (default: build/web/pyodide, or the user cache)")
    args = parser.parse_args(argv)
    print(f"dist: {ensure_dist(out=args.out)}")


if __name__ == "__main__":
    main()
