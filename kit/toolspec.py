"""tools.json, the agent's tools and the JSON Schema of each one's arguments, in the formats people have.

- the kit's: `{"tool_name": {JSON Schema of its arguments}, ...}` (golden/tools.json);
- OpenAI's tool list, as sent to the Chat Completions or Responses API:
  `[{"type": "function", "function": {"name": ..., "parameters": {...}}}]` or `[{"type": "function",
  "name": ..., "parameters": {...}}]`;
- Anthropic's: `[{"name": ..., "input_schema": {...}}]`.

All become the kit's mapping; anything else is a ValueError saying which entry is wrong and why.
"""

from __future__ import annotations

from typing import Any

_EMPTY: dict[str, Any] = {"type": "object"}  # a function declared without parameters takes any object


def _entry(i: int, raw: Any) -> tuple[str, Any]:
    if not isinstance(raw, dict):
        raise ValueError(f"tool #{i + 1}: expected an object, got {type(raw).__name__}")
    fn = raw.get("function") if isinstance(raw.get("function"), dict) else raw
    if raw.get("type", "function") != "function":
        raise ValueError(f"tool #{i + 1}: type {raw.get('type')!r} is not a function tool")
    name = fn.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"tool #{i + 1}: no name (expected function.name)")
    schema = fn.get("parameters", fn.get("input_schema", _EMPTY))
    if not isinstance(schema, dict | bool):
        raise ValueError(f"tool {name!r}: parameters must be a JSON Schema object")
    return name, schema


def tool_schemas(data: Any) -> dict[str, Any]:
    """Tool name -> JSON Schema of its arguments, from any of the formats above."""
    if isinstance(data, dict):
        if "tools" in data and isinstance(data["tools"], list):  # a request body's `tools`
            data = data["tools"]
        else:
            return data
    if not isinstance(data, list):
        raise ValueError(
            f"expected a mapping of tool name to JSON Schema, or a list of tools, got {type(data).__name__}"
        )
    out: dict[str, Any] = {}
    for i, raw in enumerate(data):
        name, schema = _entry(i, raw)
        if name in out:
            raise ValueError(f"tool {name!r} is listed twice")
        out[name] = schema
    return out
