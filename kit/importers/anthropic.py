"""Anthropic Messages -> OpenAI chat messages, read by the one OpenAI reader (kit.importers.openai_chat).

Read as the `anthropic` SDK gives them, each as JSON or `model_dump()`ed (the runner dumps the SDK's objects):
- a `Message` (`{"type": "message", "role": "assistant", "content": [...], "model", "usage", "stop_reason"}`):
  one model call with its tokens and model;
- the message list an agent keeps: `{role: user | assistant, content: text or blocks}`, where an assistant
  message carries `text`, `tool_use` (a call) and `thinking` blocks, and a user message `tool_result` blocks
  (`is_error: true` is the call's error) beside text, images and documents; a `Message` in the list stands
  for its assistant message;
- a server tool (web search and fetch, code execution, tool search), which Anthropic runs within the model
  call: its `server_tool_use` block is a call like any other, and its result block, in the same assistant
  message, the call's result (an `..._error` content is the call's error, by its `error_code`);
- streamed: the raw events (`message_start`, `content_block_*`, `message_delta`, `message_stop`),
  accumulated into their messages (a `MessageStream`'s final message is a `Message`).
Tokens: `tokens_in` is all the prompt (`input_tokens` plus the cache's read and written tokens, as OpenAI's
`prompt_tokens` counts it), and the cache's own counts stay beside it (`tokens_cache_read`, `..._write`).
A block of any other type (an MCP connector's call, a Converse `toolUse`, a server tool's result of a kind not
listed here), an OpenAI `tool` message or `tool_calls` in the list is refused by name and place: never dropped,
never an empty turn.
"""

from __future__ import annotations

import json
from typing import Any

from kit.errors import KitInputError
from kit.importers.common import UnknownBlock, block_type, maybe_json, strict_text

# The result blocks of the server tools Anthropic runs within a model call, each in the assistant message that
# holds its `server_tool_use` (the SDK's types as of anthropic 2.17).
SERVER_RESULTS = frozenset(
    {"web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result"}
    | {"bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result"}
)
# Blocks only Anthropic's messages carry: a list holding one is Anthropic's, not OpenAI's.
ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use"})
ANTHROPIC_BLOCKS |= SERVER_RESULTS
_REASONING = frozenset({"thinking", "redacted_thinking"})  # the model's hidden reasoning: no step of the agent
_INPUT_ONLY = frozenset({"image", "document", "search_result"})  # what the user gave: no step either
# The SDK's MessageStream yields, beside the raw events, its own helper events, which repeat what the deltas
# carry (text, input_json, ...): left out, so nothing is counted twice.
_HELPER_EVENTS = frozenset({"text", "input_json", "thinking", "signature", "citation"})
STREAM_EVENTS = frozenset(
    {"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta"}
    | {"message_stop", "ping"}
    | _HELPER_EVENTS
)
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls", "max_tokens": "length"}
READER = "the Anthropic reader"


def is_anthropic_message(m: Any) -> bool:
    """A dumped `Message`, or a `{role, content}` message whose blocks only Anthropic writes."""
    if not isinstance(m, dict) or "role" not in m or not isinstance(m.get("content"), list):
        return False
    blocks = m["content"]
    if any(type(b).__module__.partition(".")[0] == "anthropic" for b in blocks):
        return True  # the agent kept `response.content`, the SDK's blocks, as it came
    types = {_plain(b).get("type") for b in blocks}
    if m.get("type") == "message":  # a Message; a Responses-API message item has no model and no `text` block
        return m.get("role") == "assistant" and ("model" in m or "stop_reason" in m or "text" in types)
    return bool(types & ANTHROPIC_BLOCKS)


def is_stream_event(m: Any) -> bool:
    return isinstance(m, dict) and m.get("type") in STREAM_EVENTS


def is_anthropic(data: Any) -> bool:
    """Decoded JSON that is Anthropic's: a Message, a message list holding one of its blocks, its stream events,
    or a dict holding such a list under `messages`."""
    if isinstance(data, dict):
        if isinstance(data.get("messages"), list):
            return is_anthropic(data["messages"])
        return is_anthropic_message(data)
    if isinstance(data, list) and data:
        if all(is_stream_event(m) for m in data):
            return any(m.get("type") == "message_start" for m in data)
        return any(is_anthropic_message(m) for m in data)
    return False


def _plain(block: Any) -> dict[str, Any]:
    """A block as a dict (the SDK's objects dumped; the agent kept `response.content` as it came)."""
    if isinstance(block, dict):
        return block
    dump = getattr(block, "model_dump", None)
    if callable(dump):
        dumped: dict[str, Any] = dump(mode="json", exclude_none=True)
        return dumped
    return {}


def accumulate(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stream events as the Messages they made (a stream cut off before `message_stop` is kept as far as it
    went; its `stop_reason` is then unset)."""
    messages: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    partial: dict[int, str] = {}  # a tool_use block's arguments, streamed as JSON text
    for n, ev in enumerate(events):
        kind = ev.get("type")
        if kind == "message_start":
            current = dict(ev.get("message") or {})
            current["content"] = list(current.get("content") or [])
            current["usage"] = dict(current.get("usage") or {})
            messages.append(current)
            partial = {}
            continue
        if kind in ("ping", "message_stop") or kind in _HELPER_EVENTS:
            continue
        if current is None:
            raise UnknownBlock(f"stream event {n}: a {kind!r} event before any message_start")
        blocks = current["content"]
        if kind == "content_block_start":
            blocks.append(dict(ev.get("content_block") or {}))
        elif kind == "content_block_delta":
            i, delta = ev.get("index", len(blocks) - 1), ev.get("delta") or {}
            if not isinstance(i, int) or not 0 <= i < len(blocks):
                raise UnknownBlock(f"stream event {n}: a delta for content block {i!r}, which never started")
            dtype = delta.get("type")
            if dtype == "text_delta":
                blocks[i]["text"] = blocks[i].get("text", "") + str(delta.get("text", ""))
            elif dtype == "input_json_delta":
                partial[i] = partial.get(i, "") + str(delta.get("partial_json", ""))
            elif dtype == "thinking_delta":
                blocks[i]["thinking"] = blocks[i].get("thinking", "") + str(delta.get("thinking", ""))
            elif dtype not in ("signature_delta", "citations_delta"):
                raise UnknownBlock(
                    f"stream event {n}, content block {i}: a {dtype!r} delta, which {READER} does not read"
                )
        elif kind == "content_block_stop":
            i = ev.get("index", len(blocks) - 1)
            if isinstance(i, int) and i in partial and 0 <= i < len(blocks):
                blocks[i]["input"] = maybe_json(partial.pop(i)) if partial[i].strip() else {}
        elif kind == "message_delta":
            delta = ev.get("delta") or {}
            if delta.get("stop_reason") is not None:
                current["stop_reason"] = delta["stop_reason"]
            current["usage"].update({k: v for k, v in (ev.get("usage") or {}).items() if v is not None})
    return messages


def usage_of(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or ("input_tokens" not in raw and "output_tokens" not in raw):
        return None
    read, write = raw.get("cache_read_input_tokens"), raw.get("cache_creation_input_tokens")
    usage = {"input_tokens": (raw.get("input_tokens") or 0) + (read or 0) + (write or 0)}
    usage["output_tokens"] = raw.get("output_tokens") or 0
    if read is not None:
        usage["cache_read_input_tokens"] = read
    if write is not None:
        usage["cache_creation_input_tokens"] = write
    return usage


def _result_text(content: Any, where: str) -> str:
    """A tool_result's content: text, or text and image blocks (JSON kept as the text it is)."""
    if isinstance(content, list):
        content = [_plain(b) if not isinstance(b, str) else b for b in content]
    text = strict_text(content, where, "an Anthropic tool_result", skip=_INPUT_ONLY)
    return text if isinstance(text, str) else ""  # a result with no content


def to_openai(items: list[Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Anthropic messages (or their stream events) as OpenAI chat messages, and the error of each tool call
    whose result says `is_error` (a server tool's: holds an error), by call id. UnknownBlock names what it
    cannot read, and where."""
    plain = [_plain(m) if not isinstance(m, dict) else m for m in items]
    if plain and all(is_stream_event(m) for m in plain):
        plain = accumulate(plain)
    messages: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for i, m in enumerate(plain):
        where = f"message {i}"
        role = m.get("role")
        if m.get("type") not in (None, "message"):
            raise UnknownBlock(f"{where}: an item of type {m.get('type')!r}, which {READER} does not read")
        if "tool_calls" in m or role == "tool":
            what = "tool_calls" if "tool_calls" in m else "role 'tool'"
            raise UnknownBlock(f"{where}: {what} (OpenAI's) in an Anthropic message list: one or the other")
        if role not in ("user", "assistant", "system") or "content" not in m:
            what = f"role {role!r}" if "content" in m else "no content (keys " + ", ".join(map(repr, m)) + ")"
            raise UnknownBlock(f"{where}: {what}, which {READER} does not read")
        content = m.get("content")
        if not isinstance(content, list):
            messages.append({"role": role, "content": content if content is None else str(content)})
            continue
        blocks = [_plain(b) if not isinstance(b, str) else {"type": "text", "text": b} for b in content]
        if role == "assistant":
            messages += _assistant(m, blocks, where, errors)
        else:
            messages += _user(role, blocks, where, errors)
    return messages, errors


def _assistant(
    m: dict[str, Any], blocks: list[dict[str, Any]], where: str, errors: dict[str, str]
) -> list[dict[str, Any]]:
    """An assistant message, then a tool message for each server tool's result it holds (the call ran within
    the model call, so its result is already there)."""
    msg: dict[str, Any] = {"role": "assistant", "content": None}
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for j, b in enumerate(blocks):
        kind = b.get("type")
        if kind == "text":
            texts.append(str(b.get("text") or ""))
        elif kind in ("tool_use", "server_tool_use"):
            args = b.get("input")
            calls.append(
                {"id": b.get("id"), "type": "function", "function": {"name": b.get("name"), "arguments": args}}
            )
        elif kind in SERVER_RESULTS:
            results.append(_server_result(b, f"{where}, content block {j}", errors))
        elif kind not in _REASONING:
            raise UnknownBlock(f"{where}, content block {j}: a {block_type(b)} block, which {READER} does not read")
    if texts:
        msg["content"] = "".join(texts)
    if calls:
        msg["tool_calls"] = calls
    usage = usage_of(m.get("usage"))
    if usage:
        msg["usage"] = usage
    if isinstance(m.get("model"), str):
        msg["model"] = m["model"]
    if m.get("stop_reason") in _STOP:
        msg["finish_reason"] = _STOP[m["stop_reason"]]
    return [msg, *results]


def _server_result(b: dict[str, Any], where: str, errors: dict[str, str]) -> dict[str, Any]:
    """A server tool's result block as the tool message of its call: its content as JSON text; an error content
    (`{"type": "web_search_tool_result_error", "error_code": ...}`) the call's error."""
    cid, content = b.get("tool_use_id"), b.get("content")
    if not isinstance(cid, str):
        raise UnknownBlock(f"{where}: a {block_type(b)} block with no tool_use_id, which {READER} does not read")
    text, error = server_result(content)
    if error:
        errors[cid] = error
    return {"role": "tool", "tool_call_id": cid, "content": text}


def server_result(content: Any) -> tuple[str, str | None]:
    """A server tool's result content as the call's output (JSON text) and its error: an `..._error` content
    (`{"type": "web_search_tool_result_error", "error_code": ...}`) is named by its type and code. The export's
    reader (OpenInference's content) takes it the same way."""
    if hasattr(content, "model_dump"):  # the SDK's error object, kept inside a dict block as it came
        content = _plain(content)
    kind = content.get("type") if isinstance(content, dict) else None
    error = None
    if isinstance(kind, str) and kind.endswith("_error"):
        error = f"{kind}: {content.get('error_code') or 'no error_code'}"
    # An SDK object kept inside the content as it came is dumped as the SDK dumps it.
    text = json.dumps(content, ensure_ascii=False, separators=(",", ":"), default=lambda o: _plain(o) or str(o))
    return text, error


def _user(role: str, blocks: list[dict[str, Any]], where: str, errors: dict[str, str]) -> list[dict[str, Any]]:
    """A user message: each tool_result a tool message (first, as the API requires them), then its text."""
    out: list[dict[str, Any]] = []
    texts: list[str] = []
    rest = False
    for j, b in enumerate(blocks):
        kind = b.get("type")
        if kind == "tool_result":
            cid = b.get("tool_use_id")
            text = _result_text(b.get("content"), f"{where}, content block {j}")
            out.append({"role": "tool", "tool_call_id": cid, "content": text})
            if b.get("is_error") and isinstance(cid, str):
                errors[cid] = text or "the tool reported an error"
        elif kind == "text":
            texts.append(str(b.get("text") or ""))
            rest = True
        elif kind in _INPUT_ONLY:
            rest = True
        else:
            raise UnknownBlock(f"{where}, content block {j}: a {block_type(b)} block, which {READER} does not read")
    if rest:
        out.append({"role": role, "content": "".join(texts)})
    return out


def from_anthropic(data: Any, *, case_id: str, file: str | None = None) -> list[dict[str, Any]]:
    """One trace (a contract dict, not yet validated) from Anthropic messages as decoded JSON: a list, a
    Message, or `{"messages": [...], "model", "usage", "final_output", "end_state", ...}`."""
    from kit.importers.openai_chat import from_converted

    extra: dict[str, Any] = {}
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        extra = {k: v for k, v in data.items() if k != "messages"}
        items = data["messages"]
    else:
        items = data if isinstance(data, list) else [data]
    try:
        messages, errors = to_openai(items)
    except UnknownBlock as e:
        raise KitInputError(str(e), file=file) from None
    if isinstance(extra.get("usage"), dict):
        extra["usage"] = usage_of(extra["usage"]) or extra["usage"]
    return from_converted(extra, messages, errors, case_id=case_id, file=file, source_format="anthropic")
