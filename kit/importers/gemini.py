"""Google's `Content`s and Google ADK's `Event`s -> OpenAI chat messages, read by the one OpenAI reader.

A `Content` is `{"role": "user" | "model", "parts": [...]}`; an ADK `Event` carries one (`content`) with its
`author` (the agent that wrote it), `usage_metadata` and `model_version`, and `Runner.run` yields them (each
`model_dump()`ed, or as JSON). A model content is one model call: its `text` parts (a `thought` is the model's
reasoning, no step) and `function_call` parts (calls: id, name, args), its tokens (`prompt_token_count`,
which holds the cached ones, and `candidates_token_count` with `thoughts_token_count`). A user content's
`function_response` parts are the results (an `{"error": ...}` response is the call's error). A `partial`
event of a stream is left for the whole event that follows it; an event without content (a state change) is
no step. Any other part with content (code the model ran, a part of a newer kind) is refused by name.
"""

from __future__ import annotations

import json
from typing import Any

from kit.importers.common import UnknownBlock

# Part fields that say nothing the trace holds (metadata, or media given as input).
_QUIET = frozenset(
    {"thought_signature", "part_metadata", "media_resolution", "video_metadata", "inline_data", "file_data"}
    | {"thoughtSignature", "partMetadata", "mediaResolution", "videoMetadata", "inlineData", "fileData"}
)
READER = "the Gemini reader"


def _get(d: dict[str, Any], snake: str) -> Any:
    """A field by its Python name or its JSON (camelCase) one."""
    head, *rest = snake.split("_")
    return d.get(snake, d.get(head + "".join(w.title() for w in rest)))


def is_adk_event(m: Any) -> bool:
    return isinstance(m, dict) and "author" in m and ("invocation_id" in m or "invocationId" in m)


def is_content(m: Any) -> bool:
    """A Gemini `Content`: a role Google uses and a list of parts."""
    return isinstance(m, dict) and m.get("role") in ("user", "model") and isinstance(m.get("parts"), list)


def _fields(part: Any, where: str) -> dict[str, Any]:
    if not isinstance(part, dict):
        raise UnknownBlock(f"{where}: a {type(part).__name__} part, which {READER} does not read")
    return {k: v for k, v in part.items() if v not in (None, "", [], {}) and k not in _QUIET}


def usage_of(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    prompt, out = _get(raw, "prompt_token_count"), _get(raw, "candidates_token_count")
    if prompt is None and out is None:
        return None
    usage: dict[str, Any] = {
        "input_tokens": prompt or 0,
        "output_tokens": (out or 0) + (_get(raw, "thoughts_token_count") or 0),
    }
    cached = _get(raw, "cached_content_token_count")
    if cached:
        usage["cache_read_input_tokens"] = cached
    return usage


def to_openai(items: list[Any]) -> tuple[list[dict[str, Any]], list[str | None]]:
    """ADK events or Gemini contents as OpenAI chat messages, and the agent (author) of each assistant message.
    UnknownBlock names a part it cannot read, and where."""
    messages: list[dict[str, Any]] = []
    authors: list[str | None] = []
    pending: list[dict[str, Any]] = []  # calls not yet answered: a response without an id answers by name
    for i, item in enumerate(items):
        event = item if is_adk_event(item) else None
        content = item.get("content") if event is not None else item
        if event is not None and (event.get("partial") or not isinstance(content, dict)):
            continue  # a stream's piece (the whole event follows), or a state change: no step
        if not is_content(content):
            raise UnknownBlock(f"item {i}: no Gemini content (role user or model, and parts), which {READER} needs")
        where = f"item {i}"
        if content["role"] == "model":
            msg = _model(content["parts"], event, where)
            for j, call in enumerate(msg.get("tool_calls", [])):
                call["id"] = call["id"] or f"gemini-{i}-{j}"  # Gemini's own calls may carry no id
                pending.append(call)
            messages.append(msg)
            author = event.get("author") if event is not None else None
            authors.append(author if isinstance(author, str) and author else None)
        else:
            for r in _user(content["parts"], where):
                if r["role"] == "tool":
                    r["tool_call_id"] = _answered(pending, r.pop("name"), r["tool_call_id"], where)
                messages.append(r)
    return messages, authors


def _answered(pending: list[dict[str, Any]], name: Any, cid: Any, where: str) -> str:
    """The call a response answers: by its id, else the earliest open call of its name."""
    match = [c for c in pending if c["id"] == cid] if cid else [c for c in pending if c["function"]["name"] == name]
    if not match:
        raise UnknownBlock(f"{where}: a function_response ({name!r}, id {cid!r}) that answers no call before it")
    pending.remove(match[0])
    return str(match[0]["id"])


def _model(parts: list[Any], event: dict[str, Any] | None, where: str) -> dict[str, Any]:
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for j, part in enumerate(parts):
        f = _fields(part, f"{where}, part {j}")
        call = _get(f, "function_call")
        if f.get("thought"):
            continue  # the model's reasoning
        if isinstance(f.get("text"), str) and set(f) == {"text"}:
            texts.append(f["text"])
        elif isinstance(call, dict) and len(f) == 1:
            fn = {"name": call.get("name"), "arguments": call.get("args") or {}}
            calls.append({"id": call.get("id"), "type": "function", "function": fn})
        elif f:
            raise UnknownBlock(f"{where}, part {j}: a {{{', '.join(map(repr, f))}}} part, which {READER} does not read")
    msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if calls:
        msg["tool_calls"] = calls
    if event is not None:
        usage = usage_of(_get(event, "usage_metadata"))
        if usage:
            msg["usage"] = usage
        model = _get(event, "model_version")
        if isinstance(model, str):
            msg["model"] = model
    return msg


def _user(parts: list[Any], where: str) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = []
    texts: list[str] = []
    for j, part in enumerate(parts):
        f = _fields(part, f"{where}, part {j}")
        response = _get(f, "function_response")
        if isinstance(f.get("text"), str) and set(f) <= {"text", "thought"}:
            texts.append(f["text"])
        elif isinstance(response, dict) and len(f) == 1:
            value = response.get("response")
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            results.append(
                {"role": "tool", "tool_call_id": response.get("id"), "name": response.get("name"), "content": text}
            )
        elif f:
            raise UnknownBlock(f"{where}, part {j}: a {{{', '.join(map(repr, f))}}} part, which {READER} does not read")
    return results + ([{"role": "user", "content": "".join(texts)}] if texts else [])
