"""Run a job in headless Chromium (``pte-webgpu run``) and serve the demo (``serve``)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
from pathlib import Path

from .. import errors
from ..errors import PteError
from . import paths
from .dist import ensure_dist

# Page code: the job's PteError comes back as {"error": {type, message}} so the host
# raises the same class with the same text as the native backend.
_JOB_CODE = """
import js
from pyodide.http import pyfetch
from pte_webgpu.errors import PteError
from pte_webgpu.app.run_job import run_job

async def _get(url):
    return await (await pyfetch(url)).bytes()

def _progress(text):
    js.console.info("pte-webgpu-progress: " + text)

try:
    _data = [(name, await _get(f"/job/data{{i}}.ptd")) for i, name in enumerate({names!r})]
    _inputs = await _get("/job/inputs.npz") if {has_inputs} else None
    _result = await run_job(await _get("/job/program.pte"), _data, _inputs, {repeat},
                            profile={profile}, cast={cast}, progress=_progress)
except PteError as _e:
    _result = {{"error": {{"type": type(_e).__name__, "message": str(_e)}}}}
_result
"""
PROGRESS_PREFIX = "pte-webgpu-progress: "


def quiet(text: str) -> None:
    """A ``progress`` that hears nothing (the default of this module's jobs)."""


def remote_error(type_name: str, message: str) -> PteError:
    """The PteError subclass named `type_name` carrying `message` as its whole text."""
    cls = getattr(errors, type_name, None)
    if not (isinstance(cls, type) and issubclass(cls, PteError)):
        cls = PteError
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    return error


def page_result(session, code: str) -> dict:
    """Run a job's page code in ``session``: its result, or the job's PteError raised here
    with the same class and text as natively (an unexpected one: RuntimeError)."""
    from .session import BrowserPythonError
    try:
        result = session.run_python(code)
    except BrowserPythonError as e:
        raise RuntimeError(f"internal error in the page:\n{e.traceback}") from None
    if "error" in result:
        raise remote_error(result["error"]["type"], result["error"]["message"])
    return result


@contextlib.contextmanager
def _kept_profile():
    """The CLI's Chromium profile (its HTTP cache holds the compiled Pyodide), or None
    while another run holds it: Chromium refuses two browsers on one profile."""
    folder = paths.build_dir() / "chromium-profile"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = os.open(folder / ".pte-webgpu.lock", os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        yield None
        return
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(lock)
        yield None
        return
    try:
        yield str(folder)
    finally:
        os.close(lock)  # releases the lock


def _server_for(profile: str | None):
    """The job's server. With a kept profile, on the port that profile used before: the
    browser's cache is keyed by origin, so a new port would miss every cached file."""
    from .server import StaticServer

    if profile is None:
        return StaticServer({"/": paths.web_root()})
    record = Path(profile) / ".pte-webgpu.port"
    try:
        server = StaticServer({"/": paths.web_root()}, port=int(record.read_text()))
    except (OSError, ValueError):  # first run, or the port is taken now: a new one
        server = StaticServer({"/": paths.web_root()})
        record.write_text(str(server.url.rsplit(":", 1)[1].strip("/")))
    return server


def run_in_browser(pte: bytes, data_files: list, inputs_npz: bytes | None, repeat: int,
                   profile: bool = False, cast: bool = False, progress=quiet) -> dict:
    from .dist import version
    from .session import BrowserSession

    dist = ensure_dist(log=progress)
    # The dist's URL names its content version, so a kept profile may cache it for good.
    dist_url = f"/pyodide-{version(dist)[:16]}/"
    with tempfile.TemporaryDirectory() as tmp, _kept_profile() as user_data_dir, \
            _server_for(user_data_dir) as server:
        server.mount(dist_url, dist, immutable=True)
        job = Path(tmp)
        (job / "program.pte").write_bytes(pte)
        for i, (_, data) in enumerate(data_files):
            (job / f"data{i}.ptd").write_bytes(data)
        if inputs_npz is not None:
            (job / "inputs.npz").write_bytes(inputs_npz)
        server.mount("/job/", job)
        code = _JOB_CODE.format(names=[name for name, _ in data_files],
                                has_inputs=inputs_npz is not None, repeat=int(repeat),
                                profile=bool(profile), cast=bool(cast))
        with BrowserSession(server.url, index_url=dist_url, progress=progress,
                            user_data_dir=user_data_dir) as session:
            session.page.on("console", lambda m: m.text.startswith(PROGRESS_PREFIX)
                            and progress(m.text[len(PROGRESS_PREFIX):]))
            return page_result(session, code)


def demo_mounts(dist: Path) -> dict:
    """(prefix, folder, allow) for `serve`: the pages, the dist, and of tests/fixtures
    (a checkout's bundled examples) only index.json and the files it lists."""
    mounts = [("/", paths.web_root(), None), ("/pyodide/", dist, None)]
    fixtures = paths.fixtures_root()
    if fixtures is not None:
        allow = {"index.json"}
        for entry in json.loads((fixtures / "index.json").read_text()):
            allow.update(p for p in [entry.get("pte"), entry.get("npz"), *entry.get("ptd_files", [])] if p)
        mounts.append(("/fixtures/", fixtures, allow))
    llm = paths.build_dir() / "llm"  # `make llm`'s models, for web/chat.html
    if llm.is_dir():  # with its models.json for the chat page's picker (app/cli.py serve)
        mounts.append(("/llm/", llm, None))
    return mounts


def serve_forever(port: int, progress=quiet) -> None:
    from .server import StaticServer

    try:  # bind first: a port in use fails before the dist is built
        server = StaticServer({}, port=port)
    except OSError as e:
        if e.errno == errno.EADDRINUSE:
            raise PteError(f"port {port} is in use on 127.0.0.1; pick another with --port "
                           "(0 picks a free one)") from None
        raise PteError(f"cannot serve on 127.0.0.1:{port}: {e.strerror}") from None
    for prefix, folder, allow in demo_mounts(ensure_dist(log=progress)):
        server.mount(prefix, folder, allow)
    with server:
        print(f"pte-webgpu demo: {server.url}  (console: {server.url}console.html)", flush=True)
        print("Ctrl-C to stop", flush=True)
        try:
            import threading
            threading.Event().wait()
        except KeyboardInterrupt:
            pass
