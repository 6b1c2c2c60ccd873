"""Run a job in headless Chromium (``pte-webgpu run``) and serve the demo (``serve``)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..errors import PteError

REPO_ROOT = Path(__file__).resolve().parents[3]


def _mounts(dist: Path) -> dict:
    return {"/": REPO_ROOT / "web", "/pyodide/": dist,
            "/fixtures/": REPO_ROOT / "tests" / "fixtures",
            "/llm/": REPO_ROOT / "build" / "llm"}  # make llm's models, for web/chat.html


def _dist() -> Path:
    from .dist import ensure_dist

    if not (REPO_ROOT / "pyproject.toml").exists():
        raise PteError("the browser backend runs from a source checkout of pte-webgpu "
                       "(it builds the local Pyodide dist); or use --backend native")
    return ensure_dist(REPO_ROOT, log=lambda line: None)


def run_in_browser(pte: bytes, data_files: list, inputs_npz: bytes | None, repeat: int,
                   profile: bool = False) -> dict:
    from .server import StaticServer
    from .session import BrowserPythonError, BrowserSession

    with tempfile.TemporaryDirectory() as tmp, StaticServer(_mounts(_dist())) as server:
        job = Path(tmp)
        (job / "program.pte").write_bytes(pte)
        for i, (_, data) in enumerate(data_files):
            (job / f"data{i}.ptd").write_bytes(data)
        if inputs_npz is not None:
            (job / "inputs.npz").write_bytes(inputs_npz)
        server.mount("/job/", job)
        names = [name for name, _ in data_files]
        code = f"""
from pyodide.http import pyfetch
from pte_webgpu.jobs import run_job

async def _get(url):
    return await (await pyfetch(url)).bytes()

_data = [(name, await _get(f"/job/data{{i}}.ptd")) for i, name in enumerate({names!r})]
_inputs = await _get("/job/inputs.npz") if {inputs_npz is not None} else None
await run_job(await _get("/job/program.pte"), _data, _inputs, {int(repeat)},
              profile={bool(profile)})
"""
        with BrowserSession(server.url) as session:
            try:
                return session.run_python(code)
            except BrowserPythonError as e:
                raise PteError(_last_line(e.traceback)) from None


def _last_line(traceback: str) -> str:
    lines = [line for line in traceback.strip().splitlines() if line.strip()]
    last = lines[-1] if lines else "the page reported an error"
    return last.removeprefix("pte_webgpu.errors.")


def serve_forever(port: int) -> None:
    from .server import StaticServer

    with StaticServer(_mounts(_dist()), port=port) as server:
        print(f"pte-webgpu demo: {server.url}  (console: {server.url}console.html)", flush=True)
        print("Ctrl-C to stop", flush=True)
        try:
            import threading
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
