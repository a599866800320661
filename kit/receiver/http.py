"""The receiver's HTTP front: OTLP/HTTP `POST /v1/traces` (the stdlib's threading server, HTTP/1.1 keep-alive,
as the OTel exporters and the Collector send), and `GET /status` (the counters, JSON).

Every request is answered, whatever it holds: a body the receiver cannot read is a 4xx naming why, a fault
of the receiver's own a 500 with its message (the traceback on stderr), never a dropped connection.
"""

from __future__ import annotations

import json
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler
from typing import Any

from kit.loopback_server import NoLookupHTTPServer
from kit.receiver.decode import MAX_BODY, PROTOBUF
from kit.receiver.service import Receiver, status_body

PATH = "/v1/traces"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        ctype = self.headers.get("Content-Type")
        if self.path.split("?", 1)[0] != PATH:
            self._drain()
            return self._send(404, {"Content-Type": PROTOBUF}, status_body(PROTOBUF, 5, f"no {self.path}: POST {PATH}"))
        length = self.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            self.close_connection = True
            body = status_body(PROTOBUF, 3, "a Content-Length is required (chunked bodies are not read)")
            return self._send(411, {"Content-Type": PROTOBUF}, body)
        n = int(length)
        if n > MAX_BODY:
            self.close_connection = True
            return self._send(413, {"Content-Type": PROTOBUF}, status_body(PROTOBUF, 3, f"body over {MAX_BODY} bytes"))
        body = self.rfile.read(n)
        if len(body) < n:
            self.close_connection = True
            return None  # the sender went away mid-body: nothing to answer
        try:
            status, headers, out = self.server.receiver.accept(body, ctype, self.headers.get("Content-Encoding"))
        except Exception as e:
            traceback.print_exc(file=sys.stderr)
            status, headers = 500, {"Content-Type": PROTOBUF}
            out = status_body(PROTOBUF, 13, f"the receiver failed: {type(e).__name__}: {e}")
        return self._send(status, headers, out)

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/status":
            return self._send(404, {"Content-Type": "text/plain"}, b"not found: GET /status, POST /v1/traces\n")
        body = json.dumps(self.server.receiver.status()).encode()
        return self._send(200, {"Content-Type": "application/json"}, body)

    def _drain(self) -> None:
        length = self.headers.get("Content-Length")
        if length and length.strip().isdigit() and int(length) <= MAX_BODY:
            self.rfile.read(int(length))
        else:
            self.close_connection = True

    def _send(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # a line per request would cost more than the request


class _Server(NoLookupHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], receiver: Receiver) -> None:
        self.receiver = receiver
        super().__init__(address, _Handler)


class Front:
    """The HTTP server in a thread of its own; `close` stops accepting and waits for requests under way."""

    def __init__(self, receiver: Receiver, host: str = "127.0.0.1", port: int = 4318) -> None:
        self.server = _Server((host, port), receiver)
        self.port = self.server.server_address[1]
        # A short poll: `close` (SIGTERM) waits for the loop to notice, half a second at the default.
        self._thread = threading.Thread(
            target=self.server.serve_forever, args=(0.05,), name="kit-serve-http", daemon=True
        )

    def start(self) -> Front:
        self._thread.start()
        return self

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
