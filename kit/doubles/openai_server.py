"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1: a test double of the model.

It speaks the real wire format, so the code under test goes through its real HTTP client (the `openai`
package or plain urllib); only the model's answers are scripted.

    with ScriptedOpenAIServer(["Hello!", {"tool_calls": [{"name": "finish", "arguments": {}}]}]) as srv:
        client = OpenAI(base_url=srv.base_url, api_key="test")
        ...
        srv.requests  # the JSON bodies received, in order

A script is a list of responses consumed in order, or a callable `(request_body) -> response`. A response is
- a string: the assistant's content;
- a dict with `tool_calls` ([{name, arguments}], arguments a dict or a JSON string), optionally `content`,
  `usage` ({prompt_tokens, completion_tokens}) and `finish_reason`;
- a dict with `content` (and optionally `usage`);
- a full raw chat-completion object (a dict with `choices`), returned as is;
- an int: an HTTP status, returned as an OpenAI-style error (e.g. 429, 500);
- a dict `{"status": 503, "error": "message"}`: the same with a chosen message.
A request after the list is used up gets HTTP 500 "script exhausted", so a test never hangs or passes by luck.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler
from typing import Any

from kit.doubles.json_handler import JsonHandler
from kit.loopback_server import LoopbackServer

Response = str | int | dict[str, Any]
Script = Sequence[Response] | Callable[[dict[str, Any]], Response]

DEFAULT_MODEL = "scripted-double-2024-01-01"


def _approx_tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: about four characters per token."""
    return max(1, (len(text) + 3) // 4)


def _tool_call(index: int, call: dict[str, Any]) -> dict[str, Any]:
    args = call.get("arguments", {})
    return {
        "id": call.get("id") or f"call_{index:04d}",
        "type": "function",
        "function": {
            "name": call["name"],
            "arguments": args if isinstance(args, str) else json.dumps(args),
        },
    }


def build_completion(response: dict[str, Any] | str, request: dict[str, Any], seq: int) -> dict[str, Any]:
    """A chat-completion object for a scripted response (a string, or a dict with content/tool_calls)."""
    if isinstance(response, str):
        response = {"content": response}
    if "choices" in response:
        return response
    calls = [_tool_call(seq * 100 + i, c) for i, c in enumerate(response.get("tool_calls") or [])]
    content = response.get("content")
    message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
    if calls:
        message["tool_calls"] = calls
    prompt = json.dumps(request.get("messages", []))
    produced = (content or "") + "".join(c["function"]["name"] + c["function"]["arguments"] for c in calls)
    usage = response.get("usage") or {
        "prompt_tokens": _approx_tokens(prompt),
        "completion_tokens": _approx_tokens(produced),
    }
    usage = {**usage, "total_tokens": usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)}
    return {
        "id": f"chatcmpl-double-{seq}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model") or DEFAULT_MODEL,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": response.get("finish_reason") or ("tool_calls" if calls else "stop"),
                "logprobs": None,
            }
        ],
        "usage": usage,
    }


class ScriptedOpenAIServer(LoopbackServer):
    """A local OpenAI-compatible chat-completions endpoint answering from a script (a model double)."""

    _thread_name = "model-double"

    def __init__(self, script: Script, *, host: str = "127.0.0.1", port: int = 0) -> None:
        # Any loopback address: 127.0.0.2 stands in for a hosted model (it is outside the kit's NO_PROXY list).
        if host not in ("localhost", "::1") and not host.startswith("127."):
            raise ValueError(f"the model double listens on loopback only, not {host!r}")
        self._script = script
        self._position = 0
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self._listen(host, port, self._handler_class())

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        host = str(self._httpd.server_address[0])
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}/v1"

    @property
    def remaining(self) -> int | None:
        """How many scripted responses are left (None for a callable script)."""
        if callable(self._script):
            return None
        return len(self._script) - self._position

    def _next(self, body: dict[str, Any]) -> tuple[Response, int]:
        with self._lock:
            self.requests.append(body)
            seq = len(self.requests)
            if callable(self._script):
                return self._script(body), seq
            if self._position >= len(self._script):
                return {"status": 500, "error": f"script exhausted after {len(self._script)} responses"}, seq
            response = self._script[self._position]
            self._position += 1
            return response, seq

    def _scripted(
        self, body: dict[str, Any], headers: dict[str, str], error: Callable[[int, str], None]
    ) -> tuple[str | dict[str, Any], int] | None:
        """The script's next response and its sequence number; None once `error` has answered a response that
        is no answer (the script raised, gave an unsupported value, or a bare HTTP status)."""
        self.headers.append(headers)
        try:
            response, seq = self._next(body)
        except Exception as exc:  # a broken callable script must show up, not hang the client
            error(500, f"script raised {type(exc).__name__}: {exc}")
            return None
        if isinstance(response, bool) or not isinstance(response, str | int | dict):
            error(500, f"unsupported scripted response {response!r}")
            return None
        if isinstance(response, int):
            error(response, f"scripted HTTP {response}")
            return None
        return response, seq

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(JsonHandler):
            def _error(self, status: int, message: str) -> None:
                kind = "rate_limit_error" if status == 429 else "invalid_request_error"
                if status >= 500:
                    kind = "server_error"
                self._send(status, {"error": {"message": message, "type": kind, "code": str(status)}})

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": DEFAULT_MODEL, "object": "model"}]})
                else:
                    self._error(404, f"no route {self.path}")

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._error(404, f"no route {self.path}")
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError as exc:
                    self._error(400, f"request body is not JSON: {exc}")
                    return
                if body.get("stream"):
                    self._error(400, "the model double does not stream; call without stream=True")
                    return
                scripted = server._scripted(body, dict(self.headers.items()), self._error)
                if scripted is None:
                    return
                response, seq = scripted
                if "status" in response and "choices" not in response:
                    self._error(int(response["status"]), str(response.get("error", "scripted error")))
                else:
                    self._send(200, build_completion(response, body, seq))

        return Handler
