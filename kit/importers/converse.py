"""Bedrock Converse messages -> OpenAI chat messages, read by the one OpenAI reader (kit.importers.openai_chat).

Strands Agents keeps its conversation in this shape whatever its model (`agent.messages`), and its spans carry
it: `{"role": "user" | "assistant", "content": [block, ...]}`, a block being `{"text"}`, `{"toolUse":
{toolUseId, name, input}}` (a call), `{"toolResult": {toolUseId, status, content}}` (its result; `status:
"error"` is the call's error), `{"reasoningContent"}` (no step), or input that is no step (`image`,
`document`, `video`, `cachePoint`). An assistant message's `metadata.usage` (`inputTokens`, `outputTokens`,
the cache's `cacheReadInputTokens` / `cacheWriteInputTokens`) is its model call's, the prompt counted whole
as OpenAI's `prompt_tokens` counts it. A block of any other kind is refused naming it and its place.
"""

from __future__ import annotations

import json
from typing import Any

from kit.importers.common import UnknownBlock, block_type

CONVERSE_BLOCKS = frozenset({"toolUse", "toolResult", "reasoningContent"})  # only Converse writes these
_NO_STEP = frozenset({"reasoningContent", "image", "document", "video", "cachePoint", "citationsContent"})
READER = "the Converse reader"


def is_converse_message(m: Any) -> bool:
    """A `{role, content}` message holding a block only Converse writes."""
    if not isinstance(m, dict) or "role" not in m or not isinstance(m.get("content"), list):
        return False
    return any(isinstance(b, dict) and len(b) == 1 and next(iter(b)) in CONVERSE_BLOCKS for b in m["content"])


def _one_key(b: Any, where: str) -> tuple[str, Any]:
    """A block's one key and its value; an OpenAI- or Anthropic-style text part counts as `text`."""
    if (
        isinstance(b, dict)
        and b.get("type") == "text"
        and set(b) <= {"type", "text"}
        and isinstance(b.get("text"), str)
    ):
        return "text", b["text"]
    if not isinstance(b, dict) or len(b) != 1:
        raise UnknownBlock(f"{where}: a {block_type(b)} block, which {READER} does not read")
    [(key, value)] = b.items()
    return key, value


def _result_text(content: Any, where: str) -> str:
    """A toolResult's content blocks as text: `text` as it is, `json` as JSON text; media no step."""
    texts: list[str] = []
    for j, b in enumerate(content if isinstance(content, list) else []):
        key, value = _one_key(b, f"{where}, result block {j}")
        if key == "text":
            texts.append(str(value))
        elif key == "json":
            texts.append(json.dumps(value))
        elif key not in _NO_STEP:
            raise UnknownBlock(f"{where}, result block {j}: a {{{key!r}}} block, which {READER} does not read")
    return "".join(texts)


def usage_of(metadata: Any) -> dict[str, Any] | None:
    usage = metadata.get("usage") if isinstance(metadata, dict) else None
    if not isinstance(usage, dict):
        return None
    read, write = usage.get("cacheReadInputTokens"), usage.get("cacheWriteInputTokens")
    out: dict[str, Any] = {
        "input_tokens": (usage.get("inputTokens") or 0) + (read or 0) + (write or 0),
        "output_tokens": usage.get("outputTokens") or 0,
    }
    if read is not None:
        out["cache_read_input_tokens"] = read
    if write is not None:
        out["cache_creation_input_tokens"] = write
    return out


def to_openai(items: list[Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Converse messages as OpenAI chat messages, and the error of each call whose result says `status:
    "error"`, by call id. UnknownBlock names a block it cannot read, and where."""
    messages: list[dict[str, Any]] = []
    errors: dict[str, str] = {}
    for i, m in enumerate(items):
        where = f"message {i}"
        role = m.get("role") if isinstance(m, dict) else None
        content = m.get("content") if isinstance(m, dict) else None
        if role not in ("user", "assistant", "system") or not isinstance(content, list | str):
            raise UnknownBlock(f"{where}: {block_type(m)}, which {READER} does not read as a message")
        if isinstance(content, str):
            messages.append({"role": role, "content": content})
            continue
        texts: list[str] = []
        calls: list[dict[str, Any]] = []
        results: list[dict[str, Any]] = []
        for j, b in enumerate(content):
            key, value = _one_key(b, f"{where}, content block {j}")
            at = f"{where}, content block {j}"
            if key == "text":
                texts.append(str(value))
            elif key == "toolUse" and role == "assistant" and isinstance(value, dict):
                fn = {"name": value.get("name"), "arguments": value.get("input")}
                calls.append({"id": value.get("toolUseId"), "type": "function", "function": fn})
            elif key == "toolResult" and role == "user" and isinstance(value, dict):
                cid, text = value.get("toolUseId"), _result_text(value.get("content"), at)
                results.append({"role": "tool", "tool_call_id": cid, "content": text})
                if value.get("status") == "error" and isinstance(cid, str):
                    errors[cid] = text or "the tool reported an error"
            elif key not in _NO_STEP:
                raise UnknownBlock(f"{at}: a {{{key!r}}} block, which {READER} does not read in a {role} message")
        if role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
            if calls:
                msg["tool_calls"] = calls
            usage = usage_of(m.get("metadata"))
            if usage:
                msg["usage"] = usage
            messages.append(msg)
        else:
            messages += results  # the API puts results first in their message
            if texts or not results:
                messages.append({"role": role, "content": "".join(texts)})
    return messages, errors


def is_converse(data: Any) -> bool:
    """Decoded JSON that is a Converse conversation: a message list holding one of its blocks, or a dict
    holding one under `messages`."""
    if isinstance(data, dict):
        return isinstance(data.get("messages"), list) and is_converse(data["messages"])
    return isinstance(data, list) and any(is_converse_message(m) for m in data)


def from_converse(data: Any, *, case_id: str, file: str | None = None) -> list[dict[str, Any]]:
    """One trace (a contract dict, not yet validated) from Converse messages as decoded JSON."""
    from kit.errors import KitInputError
    from kit.importers.openai_chat import from_converted

    listed = data.get("messages") if isinstance(data, dict) else data
    if not isinstance(listed, list) or not all(isinstance(m, dict) for m in listed):
        raise KitInputError("not Converse messages (expected a list of {role, content: [blocks]} messages)", file=file)
    extra = {k: v for k, v in data.items() if k != "messages"} if isinstance(data, dict) else {}
    items = data["messages"] if isinstance(data, dict) else data
    try:
        messages, errors = to_openai(items)
    except UnknownBlock as e:
        raise KitInputError(str(e), file=file) from None
    return from_converted(extra, messages, errors, case_id=case_id, file=file, source_format="converse")
