"""The demo server's hardening: files only, nothing outside its mounts, 400 for malformed
paths, idle connections closed, a bounded log; `serve` exposes only what the page needs."""

import http.client
import json
import socket
import threading
import time
from pathlib import Path

import pytest
from pte_webgpu.chromium import remote, server

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "page.html").write_text("page")
    (root / "sub" / "a.txt").write_text("a")
    (root / "withindex").mkdir()
    (root / "withindex" / "index.html").write_text("index")
    outside = tmp_path / "secret.txt"
    outside.write_text("secret")
    (root / "link_out.txt").symlink_to(outside)
    (root / "link_dir").symlink_to(tmp_path)
    (root / "link_in.txt").symlink_to(root / "page.html")
    with server.StaticServer({"/": root}, idle_timeout=0.5) as s:
        yield s


def get(s, path):
    host, port = s._httpd.server_address[:2]
    conn = http.client.HTTPConnection(host, port, timeout=5)
    conn.putrequest("GET", path, skip_accept_encoding=True)
    conn.endheaders()
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, body


def test_files_are_served_and_folders_are_never_listed(site):
    assert get(site, "/page.html") == (200, b"page")
    assert get(site, "/withindex/") == (200, b"index")
    assert get(site, "/sub/")[0] == 404
    assert get(site, "/")[0] == 404  # no index.html at the root: still no listing


def test_symlinks_out_of_the_mount_are_refused(site):
    assert get(site, "/link_out.txt")[0] == 404
    assert get(site, "/link_dir/secret.txt")[0] == 404
    assert get(site, "/link_in.txt") == (200, b"page")
    assert get(site, "/../secret.txt")[0] == 404
    assert get(site, "/sub/%2e%2e/%2e%2e/secret.txt")[0] == 404


@pytest.mark.parametrize("path", ["/page.html%00.txt", "/%00", "/sub/%ff%fe", "/a%0d%0ab",
                                  "/sub\\a.txt"])
def test_malformed_paths_get_400(site, path):
    assert get(site, path)[0] == 400


def test_idle_connections_are_closed(site):
    host, port = site._httpd.server_address[:2]
    # count only threads started here: others of this worker may end meanwhile
    before = set(threading.enumerate())

    def new_threads():
        return len(set(threading.enumerate()) - before)

    socks = [socket.create_connection((host, port), timeout=5) for _ in range(5)]
    deadline = time.perf_counter() + 3  # accepting can lag on a loaded machine
    while new_threads() < 5 and time.perf_counter() < deadline:
        time.sleep(0.02)
    assert new_threads() >= 5  # one handler thread per connection
    started = time.perf_counter()
    for sock in socks:
        assert sock.recv(1) == b""  # the server closed it
        sock.close()
    assert time.perf_counter() - started < 3
    deadline = time.perf_counter() + 3
    while new_threads() > 0 and time.perf_counter() < deadline:
        time.sleep(0.05)
    assert new_threads() == 0


def test_the_request_log_is_bounded(site):
    for _ in range(server.LOG_LINES + 50):
        get(site, "/page.html")
    assert len(site.request_log) == server.LOG_LINES


def test_an_allowlisted_mount_serves_only_its_list(tmp_path):
    (tmp_path / "ok.pte").write_bytes(b"x")
    (tmp_path / "make.py").write_text("source")
    with server.StaticServer({}) as s:
        s.mount("/f/", tmp_path, allow={"ok.pte"})
        assert get(s, "/f/ok.pte") == (200, b"x")
        assert get(s, "/f/make.py")[0] == 404


def test_serve_exposes_only_the_bundled_examples_of_the_fixtures(tmp_path):
    mounts = {prefix: (folder, allow) for prefix, folder, allow in remote.demo_mounts(tmp_path)}
    folder, allow = mounts["/fixtures/"]
    assert folder == FIXTURES
    index = json.loads((FIXTURES / "index.json").read_text())
    assert {e["pte"] for e in index} <= allow and "index.json" in allow
    sources = [p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*")
               if p.suffix in (".py", ".txt", ".md")]
    assert sources and not set(sources) & allow
    with server.StaticServer({}) as s:
        for prefix, (folder, allow) in mounts.items():
            s.mount(prefix, folder, allow)
        assert get(s, "/fixtures/index.json")[0] == 200
        assert get(s, f"/fixtures/{index[0]['pte']}")[0] == 200
        assert get(s, f"/fixtures/{sources[0]}")[0] == 404
        assert get(s, "/index.html")[0] == 200
        assert get(s, "/fixtures/")[0] == 404


def test_a_port_in_use_is_one_line_before_anything_starts():
    from pte_webgpu.errors import PteError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(PteError, match=f"port {port} is in use"):
            remote.serve_forever(port)


def test_only_versioned_mounts_may_be_cached(tmp_path):
    (tmp_path / "a.js").write_text("x")
    with server.StaticServer({"/": tmp_path}) as s:
        s.mount("/pyodide-0123abcd/", tmp_path, immutable=True)
        host, port = s._httpd.server_address[:2]
        for path, want in (("/a.js", "no-store"), ("/pyodide-0123abcd/a.js", "immutable")):
            conn = http.client.HTTPConnection(host, port, timeout=5)
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            conn.close()
            assert want in response.getheader("Cache-Control"), path


def test_the_kept_browser_profile_is_used_by_one_run_at_a_time(tmp_path, monkeypatch):
    from pte_webgpu.chromium import paths

    monkeypatch.setattr(paths, "build_dir", lambda: tmp_path)
    with remote._kept_profile() as first:
        assert first == str(tmp_path / "chromium-profile")
        with remote._kept_profile() as second:
            assert second is None  # a concurrent run gets a fresh profile
    with remote._kept_profile() as again:
        assert again == first


def test_a_kept_profile_gets_the_same_port_each_run(tmp_path):
    """The browser cache is keyed by origin: a new port would miss the cached dist."""
    with remote._server_for(str(tmp_path)) as first:
        url = first.url
    with remote._server_for(str(tmp_path)) as second:
        assert second.url == url
        with remote._server_for(str(tmp_path)) as third:  # port taken: another one
            assert third.url != url
    with remote._server_for(None) as fresh:
        assert fresh.url.startswith("http://127.0.0.1:")
