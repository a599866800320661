"""A threaded HTTP server on loopback, served from a daemon thread while a `with` block lasts: the kit's
recording endpoint and the model doubles."""

from __future__ import annotations

import socketserver
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class NoLookupHTTPServer(ThreadingHTTPServer):
    """A `ThreadingHTTPServer` that names itself by the address it is bound to. The standard one asks for the
    address's host name (`socket.getfqdn`): for an address /etc/hosts does not name (127.0.0.2, a public one)
    that is a DNS query leaving the machine, and a stall of seconds where no resolver answers."""

    def server_bind(self) -> None:
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)


class LoopbackServer:
    """A `NoLookupHTTPServer` served from a daemon thread; a context manager that starts and stops it."""

    _thread_name = "loopback-server"
    # Short: shutdown() waits up to one interval, and tests start many servers.
    _poll_interval = 0.01

    def _listen(self, host: str, port: int, handler: type[BaseHTTPRequestHandler]) -> None:
        self._httpd = NoLookupHTTPServer((host, port), handler)
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
