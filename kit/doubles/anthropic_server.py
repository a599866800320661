"""A scripted Anthropic Messages server on loopback: a test double of the model for agents written on the
`anthropic` SDK, which reach it through the SDK's real client (`Anthropic(base_url=srv.base_url)`).

    with ScriptedAnthropicServer(["Hello!", {"tool_calls": [{"name": "lookup_order", "arguments": {...}}]}]) as srv:
        client = Anthropic(base_url=srv.base_url, api_key="test")
        ...
        srv.requests  # the JSON bodies received, in order

`POST /v1/messages` answers with a Message, or, for `"stream": true`, with its server-sent events
(`message_start`, `content_block_*`, `message_delta`, `message_stop`), as the API does. A script is what
kit.doubles.openai_server takes, in Anthropic's terms: a string is a text answer; a dict has `tool_calls`
([{name, arguments}], each a `tool_use` block), `server_tools` ([{name, input, result}], each a server tool
Anthropic ran within the call: a `server_tool_use` block, then its `<type>` result block holding `result`, both
before the text, as the API orders them), `content`, `usage` ({input_tokens, output_tokens,
cache_read_input_tokens, cache_creation_input_tokens}) and `stop_reason`; an int or `{"status", "error"}` is
an HTTP error in Anthropic's error shape. A request after the list is used up gets HTTP 500.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

from kit.doubles.json_handler import JsonHandler
from kit.doubles.openai_server import ScriptedOpenAIServer

DEFAULT_MODEL = "claude-double-1"
# Each server tool's result block type, by the tool's name (the API's).
SERVER_RESULT = {
    "web_search": "web_search_tool_result",
    "web_fetch": "web_fetch_tool_result",
    "code_execution": "code_execution_tool_result",
    "bash_code_execution": "bash_code_execution_tool_result",
    "text_editor_code_execution": "text_editor_code_execution_tool_result",
    "tool_search_tool_regex": "tool_search_tool_result",
    "tool_search_tool_bm25": "tool_search_tool_result",
}


def _tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: about four characters per token."""
    return max(1, (len(text) + 3) // 4)


def build_message(response: dict[str, Any] | str, request: dict[str, Any], seq: int) -> dict[str, Any]:
    """A Message for a scripted response (a string, or a dict with content / tool_calls)."""
    if isinstance(response, str):
        response = {"content": response}
    blocks: list[dict[str, Any]] = []
    for i, tool in enumerate(response.get("server_tools") or []):
        use_id = f"srvtoolu_{seq:02d}{i:02d}"
        blocks.append({"type": "server_tool_use", "id": use_id, "name": tool["name"], "input": tool.get("input", {})})
        blocks.append({"type": SERVER_RESULT[tool["name"]], "tool_use_id": use_id, "content": tool["result"]})
    if response.get("content"):
        blocks.append({"type": "text", "text": response["content"], "citations": None})
    for i, call in enumerate(response.get("tool_calls") or []):
        args = call.get("arguments", {})
        args = json.loads(args) if isinstance(args, str) else args
        blocks.append(
            {"type": "tool_use", "id": call.get("id") or f"toolu_{seq:02d}{i:02d}", "name": call["name"], "input": args}
        )
    calls = any(b["type"] == "tool_use" for b in blocks)
    usage = {
        "input_tokens": _tokens(json.dumps(request.get("messages", []))),
        "output_tokens": _tokens(json.dumps(blocks)),
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        **(response.get("usage") or {}),
    }
    return {
        "id": f"msg_double_{seq}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model") or DEFAULT_MODEL,
        "content": blocks,
        "stop_reason": response.get("stop_reason") or ("tool_use" if calls else "end_turn"),
        "stop_sequence": None,
        "usage": usage,
    }


def stream_events(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The events that stream `message`: its text in two deltas, each call's input as JSON in two."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield {"type": "message_start", "message": start}
    for i, block in enumerate(message["content"]):
        if block["type"] == "text":
            yield {"type": "content_block_start", "index": i, "content_block": {**block, "text": ""}}
            text = block["text"]
            for piece in (text[: len(text) // 2], text[len(text) // 2 :]):
                yield {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": piece}}
        elif "input" not in block:  # a server tool's result: whole in its start event
            yield {"type": "content_block_start", "index": i, "content_block": block}
        else:
            yield {"type": "content_block_start", "index": i, "content_block": {**block, "input": {}}}
            raw = json.dumps(block["input"])
            for piece in (raw[: len(raw) // 2], raw[len(raw) // 2 :]):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield {"type": "content_block_delta", "index": i, "delta": delta}
        yield {"type": "content_block_stop", "index": i}
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None}
    yield {"type": "message_delta", "delta": delta, "usage": {"output_tokens": usage["output_tokens"]}}
    yield {"type": "message_stop"}


class ScriptedAnthropicServer(ScriptedOpenAIServer):
    """A local Anthropic Messages endpoint answering from a script (the model double)."""

    @property
    def base_url(self) -> str:
        """What `Anthropic(base_url=...)` takes: the SDK adds `/v1/messages` itself."""
        return super().base_url.removesuffix("/v1")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(JsonHandler):
            def _error(self, status: int, message: str) -> None:
                kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(status, "invalid_request_error")
                kind = "api_error" if status >= 500 and status != 529 else kind
                self._send(status, {"type": "error", "error": {"type": kind, "message": message}})

            def _stream(self, message: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in stream_events(message):
                    self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()
                self.close_connection = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                if self.path.split("?")[0].rstrip("/") != "/v1/messages":
                    self._error(404, f"no route {self.path}")
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError as exc:
                    self._error(400, f"request body is not JSON: {exc}")
                    return
                scripted = server._scripted(body, dict(self.headers.items()), self._error)
                if scripted is None:
                    return
                response, seq = scripted
                if "status" in response:
                    self._error(int(response["status"]), str(response.get("error", "scripted error")))
                elif body.get("stream"):
                    self._stream(build_message(response, body, seq))
                else:
                    self._send(200, build_message(response, body, seq))

        return Handler
