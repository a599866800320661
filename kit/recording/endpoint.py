"""A kit endpoint in front of a model, for the calls that leave from Node (Promptfoo's attacker, the red team's
grader.cjs): an in-process recorder cannot see them, so they are given this endpoint's base URL instead of the
model's, and it records or replays them with the same files and the same matcher as the agent's calls.

    with Endpoint(recordings, "_attacker/redteam", upstream="https://api.example.com/v1") as ep:
        ep.base_url        # http://127.0.0.1:PORT/v1: what the Node side is given as its base URL
    ep.misses              # replay: the requests nobody recorded (each answered 400, x-should-retry: false)

`upstream`'s path is the endpoint's base path in every mode (replay contacts nothing, but the Node side keeps
one base URL). `model`: the model id these calls are pinned to (a recording of another is refused), None for no pin.
Every call through one endpoint is one tape (the recording `<name>.json`, attempt 0): the k-th identical request
gets the k-th recorded answer. Record mode forwards each request to `upstream` (its headers, the key among them,
go there and nowhere else) and saves each exchange as it lands, so an endpoint that is killed keeps what it saw.
"""

from __future__ import annotations

import dataclasses
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import urlsplit

from kit.loopback_server import LoopbackServer
from kit.recording.files import save_attempt
from kit.recording.format import Exchange
from kit.recording.match import request_of
from kit.recording.session import OWN_SESSION, Recordings
from kit.recording.tape import Tape
from kit.recording.wire import kept, played, refusal

# Request headers never forwarded: the endpoint's own connection, and a coding the recording would have to undo.
_HOP = {"host", "content-length", "connection", "accept-encoding", "keep-alive", "transfer-encoding"}


class Endpoint(LoopbackServer):
    """A loopback HTTP endpoint recording or replaying one tape of model calls (`name`: its recording's id)."""

    _thread_name = "kit-endpoint"
    _poll_interval = 0.05

    def __init__(
        self,
        recordings: Recordings,
        name: str,
        *,
        upstream: str | None = None,
        model: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        if not host.startswith("127."):
            raise ValueError(f"the kit's endpoint listens on loopback only, not {host!r}")
        if recordings.mode == "live":
            raise ValueError("the recordings are live: give the Node side the model's own base URL")
        # Pinned to its own model (the attacker's, the grader's), never the agent's.
        recordings = dataclasses.replace(recordings, model=model)
        self.recordings, self.name, self.upstream = recordings, name, (upstream or "").rstrip("/")
        if recordings.mode != "replay" and not self.upstream:
            raise ValueError(f"recording {name}: give the model's base URL to forward to (upstream)")
        self.tape: Tape = recordings.open(name, 0)
        self.misses: list[str] = []
        self._lock = threading.Lock()
        self._listen(host, port, self._handler())

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}" + (urlsplit(self.upstream).path.rstrip("/") if self.upstream else "")

    def answer(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
        """The response to one request, as vcrpy's response dict (status, headers, body string)."""
        request = request_of(method, path, body)
        if self.tape.mode == "replay":
            found = self.tape.answer(request)
            if found is not None:
                return played(found)
            with self._lock:
                self.misses.append(self.tape.misses[-1])
            return refusal(400, "kit recordings: no recorded answer: " + self.tape.misses[-1])
        response = self._forward(method, path, body, headers)
        exchange = kept(response)
        with self._lock:  # saved as it lands: this session's later saves of the attempt add to it
            session = self.recordings.session or OWN_SESSION
            new = [Exchange(request=request, response=exchange)]
            save_attempt(self.recordings.folder, self.name, 0, new, self.tape.model, session)
        return played(exchange)

    def _forward(self, method: str, path: str, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
        parts = urlsplit(self.upstream)
        url = f"{parts.scheme}://{parts.netloc}{path}"
        sent = {k: v for k, v in headers.items() if k.lower() not in _HOP}
        req = urllib.request.Request(url, data=body or None, method=method, headers=sent)
        try:
            with urllib.request.urlopen(req, timeout=600) as r:  # the configured upstream
                status, got, data = r.status, dict(r.headers.items()), r.read()
        except urllib.error.HTTPError as e:
            status, got, data = e.code, dict(e.headers.items()), e.read()
        return {"status": {"code": status}, "headers": got, "body": {"string": data}}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _serve(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    out = endpoint.answer(self.command, self.path, body, dict(self.headers.items()))
                except Exception as e:  # the upstream unreachable, a file that cannot be written: said, never hung
                    out = refusal(502, f"kit recordings endpoint {endpoint.name}: {type(e).__name__}: {e}")
                data = out["body"]["string"]
                self.send_response(out["status"]["code"])
                for name, values in out["headers"].items():
                    if name.lower() != "content-length":
                        for value in values:
                            self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET = do_PUT = do_DELETE = _serve

        return Handler
