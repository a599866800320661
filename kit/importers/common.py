"""Helpers shared by the importers: JSON-or-text values, tool-argument parsing, text of content parts."""

from __future__ import annotations

import json
from typing import Any


def maybe_json(value: Any) -> Any:
    """A string that holds JSON becomes the decoded value; anything else is returned as is."""
    if not isinstance(value, str):
        return value
    s = value.strip()
    if not s or (s[0] not in '{["' and s not in ("true", "false", "null") and not _numberish(s)):
        return value
    try:
        return json.loads(s)
    except json.JSONDecodeError:
        return value


def _numberish(s: str) -> bool:
    return s[0] in "-0123456789"


def parse_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Tool-call arguments as an object, and an error when they are not one.

    A model that emits malformed JSON arguments did something wrong, and the trace must say so rather
    than refuse to load: the call keeps `{}` as input and carries the parse error.
    """
    if raw is None:
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        if not raw.strip():
            return {}, None
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as e:
            return {}, f"arguments are not valid JSON ({e.msg} at column {e.colno}): {raw[:80]!r}"
        if isinstance(value, dict):
            return value, None
        return {}, f"arguments must be a JSON object, got {type(value).__name__}"
    return {}, f"arguments must be a JSON object, got {type(raw).__name__}"


def content_text(content: Any) -> str | None:
    """The text of a message's content: a string, or the text parts of a list of content parts."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                text = part.get("text", part.get("content"))
                if isinstance(text, str) and part.get("type", "text") in ("text", "output_text", "input_text"):
                    texts.append(text)
        return "".join(texts)
    return json.dumps(content, separators=(",", ":"), default=str)


def result_error(output: Any) -> str | None:
    """A tool result that reports failure as `{"error": ...}` (the common convention) is an error."""
    if isinstance(output, dict) and output.get("error") not in (None, False, ""):
        err = output["error"]
        return err if isinstance(err, str) else json.dumps(err, default=str)
    return None


# Content parts an OpenAI chat message (or a Responses-API message item) may carry: text, and input that is
# no step of the agent (images, audio, files, a refusal).
OPENAI_TEXT_PARTS = frozenset({"text", "output_text", "input_text"})
OPENAI_OTHER_PARTS = frozenset({"image_url", "input_audio", "audio", "file", "refusal", "input_image", "input_file"})


class UnknownBlock(ValueError):
    """A content block of a type the reader does not know. Refused by name and place, never dropped: a block
    the reader skipped could be a tool call, and a check would then pass on a call it never saw."""


def block_type(part: Any) -> str:
    """A content block's type as a refusal names it: its `type`, else its keys (Bedrock Converse's blocks are
    `{"toolUse": ...}`, Gemini's parts `{"function_call": ...}`), else its class."""
    if isinstance(part, dict):
        if isinstance(part.get("type"), str):
            return part["type"]
        return "{" + ", ".join(repr(k) for k in list(part)[:4]) + "}"
    return type(part).__name__


def strict_text(content: Any, where: str, reader: str, *, skip: frozenset[str] = OPENAI_OTHER_PARTS) -> str | None:
    """The text of a message's content, like `content_text`, but a block that is neither text nor of a type in
    `skip` is UnknownBlock naming it and its place (`where`, e.g. "message 3"; `reader`, what reads it)."""
    if content is None or isinstance(content, str) or not isinstance(content, list):
        return content_text(content)
    texts = []
    for j, part in enumerate(content):
        if isinstance(part, str):
            texts.append(part)
            continue
        kind = part.get("type") if isinstance(part, dict) else None
        if isinstance(part, dict) and kind is None and set(part) == {"text"} and isinstance(part["text"], str):
            texts.append(part["text"])  # a text part that leaves its type out
        elif kind in OPENAI_TEXT_PARTS and isinstance(part.get("text", part.get("content")), str):  # type: ignore[union-attr]
            texts.append(part.get("text", part.get("content")))  # type: ignore[union-attr]
        elif kind not in skip or not isinstance(part, dict):
            raise UnknownBlock(f"{where}, content block {j}: a {block_type(part)} block, which {reader} does not carry")
    return "".join(texts)
