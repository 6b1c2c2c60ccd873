"""A small threaded static HTTP server on 127.0.0.1 serving several mounted folders.

    with StaticServer({"/": "web", "/pyodide/": dist}) as server:
        page.goto(server.url + "harness.html")
"""

from __future__ import annotations

import threading
import urllib.parse
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


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

    def translate_path(self, path: str) -> str:
        path = urllib.parse.unquote(urllib.parse.urlsplit(path).path)
        for prefix, folder in self.server.mounts_longest_first():
            if path.startswith(prefix) or path == prefix.rstrip("/"):
                # Dropping "." and ".." keeps requests inside the mounted folder.
                parts = [p for p in path[len(prefix):].split("/") if p not in ("", ".", "..")]
                return str(folder.joinpath(*parts)) + ("/" if path.endswith("/") else "")
        return ""  # not mounted: 404

    def end_headers(self) -> None:
        # Tests rebuild the wheel and lock between runs: never serve stale copies.
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format: str, *args) -> None:
        self.server.request_log.append(format % args)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address, mounts: dict[str, Path]):
        super().__init__(address, _MountedFolderHandler)
        self.mounts = mounts
        self.request_log: list[str] = []

    def mounts_longest_first(self):
        return sorted(self.mounts.items(), key=lambda item: len(item[0]), reverse=True)

    def handle_error(self, request, client_address) -> None:
        pass  # the browser closing a connection early is not worth a traceback


class StaticServer:
    """Serve `mounts` ({"/url/prefix/": folder}) on http://127.0.0.1:<free port>/."""

    def __init__(self, mounts: dict[str, str | Path], host: str = "127.0.0.1", port: int = 0):
        self._httpd = _Server((host, port), {})
        self._thread: threading.Thread | None = None
        for prefix, folder in mounts.items():
            self.mount(prefix, folder)

    def mount(self, prefix: str, folder: str | Path) -> str:
        """Serve `folder` under `prefix` (also while running); returns its URL."""
        prefix = "/" + prefix.strip("/") + "/" if prefix.strip("/") else "/"
        self._httpd.mounts[prefix] = Path(folder).resolve()
        return self.url + prefix.lstrip("/")

    @property
    def url(self) -> str:
        """Base URL with a trailing slash, e.g. http://127.0.0.1:40123/."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/"

    @property
    def request_log(self) -> list[str]:
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
