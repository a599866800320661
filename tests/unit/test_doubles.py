"""The model double: a scripted OpenAI-compatible server reached through real HTTP clients."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import openai
import pytest
from openai import OpenAI

from kit.doubles.openai_server import ScriptedOpenAIServer


def _client(srv: ScriptedOpenAIServer) -> OpenAI:
    return OpenAI(base_url=srv.base_url, api_key="test-key", max_retries=0, timeout=5)


def _post(url: str, body: dict) -> tuple[int, dict]:
    req = urllib.request.Request(
        url + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_plain_string_and_tool_calls_through_openai_client() -> None:
    script = ["Hello there.", {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "ORD-1"}}]}]
    with ScriptedOpenAIServer(script) as srv:
        client = _client(srv)
        first = client.chat.completions.create(
            model="m-2024-01-01", messages=[{"role": "user", "content": "hi"}], temperature=0
        )
        second = client.chat.completions.create(model="m-2024-01-01", messages=[{"role": "user", "content": "x"}])
    assert first.choices[0].message.content == "Hello there."
    assert first.choices[0].finish_reason == "stop"
    assert first.usage is not None and first.usage.prompt_tokens > 0 and first.usage.completion_tokens > 0
    call = second.choices[0].message.tool_calls[0]
    assert call.function.name == "lookup_order"
    assert json.loads(call.function.arguments) == {"order_id": "ORD-1"}
    assert second.choices[0].finish_reason == "tool_calls"
    assert [r["messages"][0]["content"] for r in srv.requests] == ["hi", "x"]
    assert srv.requests[0]["temperature"] == 0
    assert {k.lower(): v for k, v in srv.headers[0].items()}["authorization"] == "Bearer test-key"


def test_scripted_usage_and_raw_completion_pass_through() -> None:
    raw = {
        "id": "chatcmpl-raw",
        "object": "chat.completion",
        "created": 1,
        "model": "raw-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "raw"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10},
    }
    with ScriptedOpenAIServer([{"content": "ok", "usage": {"prompt_tokens": 11, "completion_tokens": 2}}, raw]) as srv:
        a = _post(srv.base_url, {"model": "m", "messages": []})
        b = _post(srv.base_url, {"model": "m", "messages": []})
    assert a[0] == 200 and a[1]["usage"] == {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}
    assert b == (200, raw)


def test_http_status_becomes_openai_error() -> None:
    with ScriptedOpenAIServer([429, {"status": 503, "error": "overloaded"}]) as srv:
        client = _client(srv)
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "a"}])
        status, body = _post(srv.base_url, {"model": "m", "messages": []})
    assert status == 503 and body["error"]["message"] == "overloaded"


def test_exhausted_script_fails_loudly() -> None:
    with ScriptedOpenAIServer(["only one"]) as srv:
        assert _post(srv.base_url, {"messages": []})[0] == 200
        status, body = _post(srv.base_url, {"messages": []})
        assert srv.remaining == 0
    assert status == 500 and "script exhausted" in body["error"]["message"]


def test_callable_script_sees_the_request() -> None:
    def echo(body: dict) -> str:
        return "echo: " + body["messages"][-1]["content"]

    with ScriptedOpenAIServer(echo) as srv:
        out = _client(srv).chat.completions.create(model="m", messages=[{"role": "user", "content": "ping"}])
    assert out.choices[0].message.content == "echo: ping"


def test_callable_script_that_raises_gives_500() -> None:
    def broken(body: dict) -> str:
        raise KeyError("nope")

    with ScriptedOpenAIServer(broken) as srv:
        status, body = _post(srv.base_url, {"messages": []})
    assert status == 500 and "KeyError" in body["error"]["message"]


def test_loopback_only_and_free_port() -> None:
    with pytest.raises(ValueError):
        ScriptedOpenAIServer([], host="0.0.0.0")
    with ScriptedOpenAIServer([]) as a, ScriptedOpenAIServer([]) as b:
        assert a.port != b.port and a.base_url.startswith("http://127.0.0.1:")
