"""A sampling model double on loopback: OpenAI chat completions (plain and streamed as server-sent events) and
Anthropic messages, each answer drawn anew per request, as a sampled model gives them.

    with SamplingModel(["Refund approved.", "REFUND DENIED"], seed=7) as model:   # on 127.0.0.2
        OpenAI(base_url=model.base_url + "/v1", api_key="sk-test").chat.completions.create(...)
        Anthropic(base_url=model.base_url, api_key="sk-ant-test").messages.create(...)
        model.requests   # (path, JSON body, headers) received, in order

The same request may get another answer the next time: the draw is from a seeded generator, so a test's
answers are reproducible only in the order they are asked. It speaks the real wire formats, so the code under
test goes through its real SDK client.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from kit.loopback_server import LoopbackServer


def _tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


class SamplingModel(LoopbackServer):
    """A loopback HTTP server drawing each answer from `answers` (`weights` optional)."""

    _thread_name = "sampling-model"

    def __init__(
        self,
        answers: Sequence[str],
        *,
        seed: int = 0,
        weights: Sequence[float] | None = None,
        host: str = "127.0.0.2",
        port: int = 0,
    ) -> None:
        if not host.startswith("127."):
            raise ValueError(f"the model double listens on loopback only, not {host!r}")
        self.answers, self.weights = list(answers), list(weights) if weights else None
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self._listen(host, port, self._handler())

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def draw(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> str:
        with self._lock:
            self.requests.append((path, body, {k.lower(): v for k, v in headers.items()}))
            return self._rng.choices(self.answers, weights=self.weights)[0]

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def _send(self, status: int, data: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, b'{"error": {"message": "not JSON"}}')
                    return
                path = self.path.split("?")[0].rstrip("/")
                if path.endswith("/chat/completions"):
                    text = model.draw(path, body, dict(self.headers.items()))
                    if body.get("stream"):
                        self._send(200, _openai_stream(body, text), "text/event-stream")
                    else:
                        self._send(200, json.dumps(_openai(body, text)).encode())
                elif path.endswith("/messages"):
                    text = model.draw(path, body, dict(self.headers.items()))
                    self._send(200, json.dumps(_anthropic(body, text)).encode())
                else:
                    self._send(404, json.dumps({"error": {"message": f"no route {self.path}"}}).encode())

        return Handler


def _usage(body: dict[str, Any], text: str) -> tuple[int, int]:
    return _tokens(json.dumps(body.get("messages", []))), _tokens(text)


def _openai(body: dict[str, Any], text: str) -> dict[str, Any]:
    prompt, completion = _usage(body, text)
    return {
        "id": "chatcmpl-sampled",
        "object": "chat.completion",
        "created": 1700000000,
        "model": body.get("model", ""),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": None}
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
    }


def _openai_stream(body: dict[str, Any], text: str) -> bytes:
    base = {"id": "chatcmpl-sampled", "object": "chat.completion.chunk", "created": 1700000000}
    base["model"] = body.get("model", "")
    chunks = [{**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    for word in text.split(" "):
        piece = word if chunks[-1]["choices"][0]["delta"].get("content") == "" else " " + word
        chunks.append({**base, "choices": [{"index": 0, "delta": {"content": piece}}]})
    chunks.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if (body.get("stream_options") or {}).get("include_usage"):
        prompt, completion = _usage(body, text)
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        chunks.append({**base, "choices": [], "usage": usage})
    events = [f"data: {json.dumps(c)}\n\n" for c in chunks] + ["data: [DONE]\n\n"]
    return "".join(events).encode()


def _anthropic(body: dict[str, Any], text: str) -> dict[str, Any]:
    prompt, completion = _usage(body, text)
    return {
        "id": "msg_sampled",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", ""),
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": prompt, "output_tokens": completion},
    }
