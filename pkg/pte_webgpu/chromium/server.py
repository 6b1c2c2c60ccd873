"""A small threaded static HTTP server on 127.0.0.1 serving several mounted folders.

    with StaticServer({"/": "web", "/pyodide/": dist}) as server:
        page.goto(server.url + "harness.html")

Hardened for a demo that anyone on the machine can reach: files only (a folder
serves its index.html or 404, never a listing), nothing outside a mounted folder
(symlinks included), optionally only an allowlist of files per mount, 400 for
malformed paths (NUL, control characters, bad percent-encoding), idle connections
closed after `idle_timeout` seconds, and a request log of bounded length.
"""

from __future__ import annotations

import collections
import os
import threading
import urllib.parse
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

LOG_LINES = 1000
IDLE_TIMEOUT_S = 30.0


class _MountedFolderHandler(SimpleHTTPRequestHandler):
    extensions_map = {
        **SimpleHTTPRequestHandler.extensions_map,
        ".wasm": "application/wasm",  # needed for WebAssembly streaming compilation
        ".mjs": "text/javascript",
        ".js": "text/javascript",
        ".json": "application/json",
        ".whl": "application/zip",
        ".zip": "application/zip",
    }

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout  # socket timeout: an idle keep-alive ends
        super().setup()

    def do_GET(self) -> None:
        if self._path_is_well_formed():
            super().do_GET()

    def do_HEAD(self) -> None:
        if self._path_is_well_formed():
            super().do_HEAD()

    def _path_is_well_formed(self) -> bool:
        try:
            path = urllib.parse.unquote(urllib.parse.urlsplit(self.path).path, errors="strict")
        except (UnicodeDecodeError, ValueError):
            path = "\x00"
        if not path.startswith("/") or any(ord(c) < 32 or c == "\x7f" or c == "\\" for c in path):
            self.send_error(HTTPStatus.BAD_REQUEST, "malformed path")
            return False
        return True

    def translate_path(self, path: str) -> str:
        """The file to serve, or "" (404) for anything not inside a mount's allowed files."""
        path = urllib.parse.unquote(urllib.parse.urlsplit(path).path)
        self.immutable = False
        for prefix, mount in self.server.mounts_longest_first():
            if path.startswith(prefix) or path == prefix.rstrip("/"):
                self.immutable = mount.immutable
                parts = [p for p in path[len(prefix):].split("/") if p not in ("", ".")]
                if ".." in parts:
                    return ""
                return mount.file_for(parts, trailing_slash=path.endswith("/"))
        return ""  # not mounted: 404

    def list_directory(self, path):
        self.send_error(HTTPStatus.NOT_FOUND, "File not found")
        return None

    def end_headers(self) -> None:
        # Files change between runs under the same URL (tests rebuild the dist, each job
        # has its own program.pte): never cached, except in mounts whose URL carries a
        # content version (the CLI's dist), which a browser profile may keep for good.
        if getattr(self, "immutable", False):
            self.send_header("Cache-Control", "public, max-age=31536000, immutable")
        else:
            self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:
        self.server.request_log.append(format % args)


class _Mount:
    def __init__(self, folder: Path, allow: set[str] | None, immutable: bool = False):
        self.folder = folder.resolve()
        self.allow = allow
        self.immutable = immutable

    def file_for(self, parts: list[str], trailing_slash: bool) -> str:
        candidate = self.folder.joinpath(*parts)
        if candidate.is_dir():
            if not trailing_slash:  # the handler redirects to the slashed URL
                return str(candidate) if self._inside(candidate) else ""
            parts, candidate = [*parts, "index.html"], candidate / "index.html"
        if self.allow is not None and "/".join(parts) not in self.allow:
            return ""
        return str(candidate) if candidate.is_file() and self._inside(candidate) else ""

    def _inside(self, path: Path) -> bool:
        real = os.path.realpath(path)  # follows symlinks: one pointing out is refused
        return real == str(self.folder) or real.startswith(str(self.folder) + os.sep)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, idle_timeout: float):
        super().__init__(address, _MountedFolderHandler)
        self.mounts: dict[str, _Mount] = {}
        self.idle_timeout = idle_timeout
        self.request_log: collections.deque[str] = collections.deque(maxlen=LOG_LINES)

    def mounts_longest_first(self):
        return sorted(self.mounts.items(), key=lambda item: len(item[0]), reverse=True)

    def handle_error(self, request, client_address) -> None:
        pass  # the browser closing a connection early is not worth a traceback


class StaticServer:
    """Serve `mounts` ({"/url/prefix/": folder}) on http://127.0.0.1:<free port>/.

    Binding happens here, so a port in use fails before anything else starts."""

    def __init__(self, mounts: dict[str, str | Path], host: str = "127.0.0.1", port: int = 0,
                 idle_timeout: float = IDLE_TIMEOUT_S):
        self._httpd = _Server((host, port), idle_timeout)
        self._thread: threading.Thread | None = None
        for prefix, folder in mounts.items():
            self.mount(prefix, folder)

    def mount(self, prefix: str, folder: str | Path, allow=None, immutable: bool = False) -> str:
        """Serve `folder` under `prefix` (also while running); returns its URL.
        `allow`: relative paths ("a/b.pte") that may be served; None serves every file.
        `immutable`: the prefix names the content's version, so browsers may cache it."""
        prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
        self._httpd.mounts[prefix] = _Mount(Path(folder), None if allow is None else set(allow),
                                            immutable)
        return self.url + prefix.lstrip("/")

    @property
    def url(self) -> str:
        """Base URL with a trailing slash, e.g. http://127.0.0.1:40123/."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/"

    @property
    def request_log(self) -> collections.deque[str]:
        """The last LOG_LINES requests."""
        return self._httpd.request_log

    def start(self) -> "StaticServer":
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="static-server", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread:
            self._httpd.shutdown()
            self._thread.join()
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> "StaticServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
