"""Shared fixtures for browser tests (marked `browser`): one local Pyodide dist, one
static server and one headless Chromium page per test run.

Any test marked `browser` fails if the page logged a console error or an uncaught
exception while it ran; the page's console output is attached to the report.
"""

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
_PAGE_LOG_START = pytest.StashKey()
_sessions_started = []


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def pyodide_dist(repo_root) -> Path:
    """build/web/pyodide, rebuilt with the current sources (our wheel is rebuilt)."""
    from pte_webgpu.chromium.dist import ensure_dist

    return ensure_dist(repo_root, log=lambda line: None)


@pytest.fixture(scope="session")
def web_server(repo_root, pyodide_dist):
    """Serves web/ at /, the dist at /pyodide/, tests/fixtures/ at /fixtures/.
    Tests can serve more folders with `web_server.mount("/name/", folder)`."""
    from pte_webgpu.chromium.server import StaticServer

    mounts = {"/": repo_root / "web", "/pyodide/": pyodide_dist,
              "/fixtures/": repo_root / "tests" / "fixtures"}
    with StaticServer(mounts) as server:
        yield server


@pytest.fixture(scope="session")
def browser_session(web_server):
    """A booted page: Pyodide with pte-webgpu loaded. State persists across tests."""
    from pte_webgpu.chromium.session import BrowserSession

    with BrowserSession(web_server.url) as session:
        _sessions_started.append(session)
        yield session


@pytest.fixture(autouse=True)
def _mark_page_log_start(request):
    if request.node.get_closest_marker("browser"):
        session = request.getfixturevalue("browser_session")
        request.node.stash[_PAGE_LOG_START] = (session, len(session.console_messages),
                                               len(session.page_errors))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    start = item.stash.get(_PAGE_LOG_START, None)
    if start is None:
        return (yield)
    session, console_start, errors_start = start

    def attach_log_return_errors():
        messages = session.console_messages[console_start:]
        page_errors = session.page_errors[errors_start:]
        log = [str(m) for m in messages] + [f"[pageerror] {e}" for e in page_errors]
        item.add_report_section("call", "browser console", "\n".join(log))
        return [str(m) for m in messages if m.type == "error"] + [f"[pageerror] {e}" for e in page_errors]

    try:
        result = yield
    except BaseException:
        attach_log_return_errors()
        raise
    errors = attach_log_return_errors()
    if errors:  # the whole log is in the report section "browser console"
        pytest.fail("the page logged errors during the test:\n" + "\n".join(errors), pytrace=False)
    return result


def _boot_lines() -> list[str]:
    lines = []
    for session in _sessions_started:
        stages = ", ".join(f"{s['stage']} @{s['ms']} ms" for s in session.boot_stages if "message" not in s)
        lines.append(f"browser: launch {session.launch_seconds:.2f} s, "
                     f"boot {session.boot_seconds:.2f} s ({stages})")
    return lines


_worker_boot_lines = []  # under pytest-xdist (`make test`): each worker's browser, in the controller


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: hand the lines to the controller
        workeroutput["browser_boot"] = _boot_lines()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    _worker_boot_lines.extend(getattr(node, "workeroutput", {}).get("browser_boot", []))


def pytest_terminal_summary(terminalreporter):
    for line in _boot_lines() + _worker_boot_lines:
        terminalreporter.write_line(line)
