"""A threaded HTTP server on loopback, served from a daemon thread while a `with` block lasts: the kit's
recording endpoint and the model doubles."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LoopbackServer:
    """A `ThreadingHTTPServer` served from a daemon thread; a context manager that starts and stops it."""

    _thread_name = "loopback-server"
    # Short: shutdown() waits up to one interval, and tests start many servers.
    _poll_interval = 0.01

    def _listen(self, host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = ThreadingHTTPServer((host, port), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": self._poll_interval},
            name=self._thread_name,
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
