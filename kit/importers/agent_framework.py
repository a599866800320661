"""Microsoft Agent Framework messages -> OpenAI chat messages, read by the one OpenAI reader.

Read as `agent.run()` returns them: an `AgentResponse` (its `messages`, `usage_details`, `finish_reason`), its
`to_dict()` (`{"type": "agent_response", "messages": [...]}`), or its `Message`s (objects or `to_dict()`ed:
`{"type": "message", "role", "contents": [...], "author_name"}`). Nothing of the framework is imported.
- An assistant message is one model call: its `function_call` contents are its calls (`arguments` JSON text
  or a mapping), its `text` contents its answer; `text_reasoning` (the model's hidden reasoning) is no step.
- A tool message's `function_result` contents are the calls' results, paired by `call_id`; a result with an
  `exception` (the framework redacts it to a marker when dumped) is the call's error.
- A `usage` content is its call's tokens; the response's `usage_details` is the run's total (on the first
  model call when no call has its own, never counted twice).
- Each message's `author_name` is the agent that said it, so a run of one named agent carries its name.
Any other content type (a hosted tool's call, an approval request, data, an error) is refused by name and
place: never dropped.
"""

from __future__ import annotations

import json
from typing import Any

from kit.importers.common import UnknownBlock

READER = "the Agent Framework reader"
_QUIET = frozenset({"text_reasoning"})  # the model's hidden reasoning: no step of the agent
_TEXT = "text"
_ROLES = frozenset({"user", "assistant", "system", "tool"})


def is_agent_framework_message(m: Any) -> bool:
    """One of the framework's `Message`s, as its object or `to_dict()`ed."""
    if not isinstance(m, dict):
        return type(m).__module__.partition(".")[0] == "agent_framework" and callable(getattr(m, "to_dict", None))
    kind = m.get("type") in ("message", "agent_response_update")  # an update is refused by the reader, by name
    return kind and isinstance(m.get("contents"), list) and "content" not in m


def _plain(m: Any) -> dict[str, Any]:
    if isinstance(m, dict):
        return m
    dumped: dict[str, Any] = m.to_dict()
    return dumped


def usage_of(details: Any) -> dict[str, Any] | None:
    """A `UsageDetails` as the OpenAI reader's usage (the cache's counts beside the prompt they are part of)."""
    if not isinstance(details, dict) or not ({"input_token_count", "output_token_count"} & set(details)):
        return None
    usage: dict[str, Any] = {
        "input_tokens": details.get("input_token_count") or 0,
        "output_tokens": details.get("output_token_count") or 0,
    }
    for ours, theirs in (
        ("cache_read_input_tokens", "cache_read_input_token_count"),
        ("cache_creation_input_tokens", "cache_creation_input_token_count"),
    ):
        if details.get(theirs) is not None:
            usage[ours] = details[theirs]
    return usage


def _result_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def to_openai(items: list[Any]) -> tuple[list[dict[str, Any]], dict[str, str], list[str | None]]:
    """The messages as OpenAI chat messages; the error of each failed call by call id; the author of each
    assistant message, in order. UnknownBlock names what it cannot read, and where."""
    messages: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    authors: list[str | None] = []
    for i, raw in enumerate(items):
        m = _plain(raw)
        where = f"message {i}"
        role = m.get("role")
        if m.get("type") == "agent_response_update":  # a streamed run's pieces: the framework joins them
            raise UnknownBlock(
                f"{where}: an agent_response_update, which {READER} does not read: return the run's AgentResponse "
                "(`AgentResponse.from_updates(updates)`)"
            )
        if m.get("type") != "message" or role not in _ROLES or not isinstance(m.get("contents"), list):
            raise UnknownBlock(f"{where}: a {m.get('type')!r} item of role {role!r}, which {READER} does not read")
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        usage: dict[str, Any] | None = None
        for j, c in enumerate(m["contents"]):
            kind = c.get("type") if isinstance(c, dict) else None
            place = f"{where}, content {j}"
            if kind == _TEXT:
                texts.append(str(c.get("text") or ""))
            elif kind in _QUIET:
                continue
            elif kind == "function_call" and role == "assistant":
                calls.append(
                    {
                        "id": c.get("call_id"),
                        "type": "function",
                        "function": {"name": c.get("name"), "arguments": c.get("arguments")},
                    }
                )
            elif kind == "function_result" and role == "tool":
                cid = c.get("call_id")
                text = _result_text(c.get("result"))
                messages.append({"role": "tool", "tool_call_id": cid, "content": text})
                if c.get("exception") is not None and isinstance(cid, str):
                    errors[cid] = text or "the tool raised an exception"
            elif kind == "usage" and role == "assistant":
                usage = usage_of(c.get("usage_details"))
            else:
                what = kind if isinstance(kind, str) else type(c).__name__
                raise UnknownBlock(f"{place}: a {what} content in a {role} message, which {READER} does not read")
        if role == "tool":
            if texts:
                raise UnknownBlock(f"{where}: text in a tool message, which {READER} does not read")
            continue
        msg: dict[str, Any] = {"role": role, "content": "".join(texts) if texts else None}
        if calls:
            msg["tool_calls"] = calls
        if usage:
            msg["usage"] = usage
        if role == "assistant":
            authors.append(m.get("author_name") if isinstance(m.get("author_name"), str) else None)
        messages.append(msg)
    return messages, errors, authors


def is_agent_framework(data: Any) -> bool:
    """Decoded JSON that is an `AgentResponse.to_dict()` or a list of its messages."""
    if isinstance(data, dict) and data.get("type") == "agent_response" and isinstance(data.get("messages"), list):
        return True
    return isinstance(data, list) and bool(data) and all(is_agent_framework_message(m) for m in data)


def from_agent_framework(data: Any, *, case_id: str, file: str | None = None) -> list[dict[str, Any]]:
    """One trace (a contract dict, not yet validated) from an AgentResponse's `to_dict()` or its messages."""
    from kit.errors import KitInputError
    from kit.importers.openai_chat import from_converted

    items = data["messages"] if isinstance(data, dict) else data
    try:
        messages, errors, authors = to_openai(items)
    except UnknownBlock as e:
        raise KitInputError(str(e), file=file) from None
    said = [m for m in messages if m["role"] == "assistant"]
    if said and isinstance(data, dict) and isinstance(data.get("finish_reason"), str):
        said[-1]["finish_reason"] = data["finish_reason"]  # the last call's, as chat completions say it
    extra = {"usage": usage_of(data.get("usage_details"))} if isinstance(data, dict) else {}
    extra = {k: v for k, v in extra.items() if v}
    named = sorted({a for a in authors if a})
    if len(named) > 1:  # who handed off to whom is the runner's to read (kit.runner.framework_agents)
        raise KitInputError(
            f"messages of several agents ({', '.join(named)}): kit import reads the response of one agent; "
            "return the AgentResponse from the agent callable instead",
            file=file,
        )
    [trace] = from_converted(extra, messages, errors, case_id=case_id, file=file, source_format="agent_framework")
    for span in trace["spans"] if named else []:
        span["agent"] = named[0]  # a run of one agent its framework names carries the name
    return [trace]
