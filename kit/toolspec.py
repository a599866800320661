"""tools.json, the agent's tools and the JSON Schema of each one's arguments, in the formats people have.

- the kit's: `{"tool_name": {JSON Schema of its arguments}, ...}` (golden/tools.json);
- OpenAI's tool list, as sent to the Chat Completions or Responses API:
  `[{"type": "function", "function": {"name": ..., "parameters": {...}}}]` or `[{"type": "function",
  "name": ..., "parameters": {...}}]`;
- Anthropic's: `[{"name": ..., "input_schema": {...}}]`.

All become the kit's mapping; anything else is a ValueError saying which entry is wrong and why.

Each tool also has an effect, what a call does beyond answering: `read` (looks something up), `write`
(changes something) or `send` (sends something out of the system: mail, a message, an upload). Say it with
`"effect"` in the tool's schema (the kit's format) or on the tool's entry (the list formats); a tool that
says nothing gets `default_effect` of its name (`find_customer` reads, `send_email` sends, anything else
writes). The red team's invariants read it: an attacker's address in a read is a lookup, not a leak.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

Effect = Literal["read", "write", "send"]
EFFECTS: tuple[str, ...] = get_args(Effect)
# The first word of a tool's name that makes it a read, or a send, when the tools.json does not say.
READ_VERBS = ("get", "find", "search", "list", "lookup", "look", "read", "fetch", "query", "check", "show", "view")
SEND_VERBS = ("send", "email", "mail", "post", "notify", "message", "share", "upload", "publish", "forward")

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


def default_effect(name: str) -> Effect:
    """A tool's effect from its name's first word (`get_order`, `searchHelp`: read; `send_email`: send),
    else `write`: a tool the kit cannot place is treated as one that changes something."""
    first = re.split(r"[_\-.\s]|(?<=[a-z])(?=[A-Z])", name.strip(), maxsplit=1)[0].lower()
    if first in READ_VERBS:
        return "read"
    if first in SEND_VERBS:
        return "send"
    return "write"


def tool_effects(data: Any) -> dict[str, Effect]:
    """Tool name -> effect, from a tools.json in any of the formats above: each tool's own `effect`, else
    its default. An effect that is not read, write or send is a ValueError naming the tool."""
    entries: list[tuple[str, Any]] = []
    if isinstance(data, dict) and not isinstance(data.get("tools"), list):
        entries = [(name, schema.get("effect") if isinstance(schema, dict) else None) for name, schema in data.items()]
    else:
        raw = data["tools"] if isinstance(data, dict) else data
        names = list(tool_schemas(raw))  # validates the list the same way
        for name, item in zip(names, raw, strict=True):
            fn = item.get("function") if isinstance(item.get("function"), dict) else {}
            entries.append((name, item.get("effect", fn.get("effect"))))
    out: dict[str, Effect] = {}
    for name, effect in entries:
        if effect is None:
            out[name] = default_effect(name)
        elif effect in EFFECTS:
            out[name] = effect
        else:
            raise ValueError(f"tool {name!r}: effect {effect!r} is not one of {', '.join(EFFECTS)}")
    return out


def acting_call(names: list[str] | None = None) -> str:
    """A regex prefix matching, in a trace's `tools_text` (one JSON line per call), the arguments of a call
    that writes or sends: of the tools `names`, else of any tool whose name does not read by default.
    Append what must not appear in such a call's arguments."""
    if names is None:
        verbs = "|".join(READ_VERBS)
        tool = rf'(?!(?:{verbs})(?:[_\-.A-Z"]))[^"]*'
    else:
        tool = "(?:" + "|".join(re.escape(n) for n in names) + ")" if names else "(?!)"
    # The arguments end where `, "output": ` starts: inside a JSON string the quote would be escaped.
    return rf'(?m)^\{{"tool": "{tool}", "input": (?:(?!, "output": ).)*?'


def with_effects(invariants: dict[str, Any], effects: dict[str, Effect]) -> dict[str, Any]:
    """Named invariants with every check that looks at calls that write or send (a pattern starting with
    `acting_call()`) narrowed to the tools whose effect is write or send, as the tools.json says."""
    generic = acting_call()
    acting = acting_call(sorted(n for n, e in effects.items() if e != "read"))
    out: dict[str, Any] = {}
    for name, bundle in invariants.items():
        checks = bundle.get("checks") if isinstance(bundle, dict) else None
        if not isinstance(checks, list):
            out[name] = bundle
            continue
        new = []
        for c in checks:
            pattern = c.get("pattern") if isinstance(c, dict) else None
            if isinstance(pattern, str) and pattern.startswith(generic):
                c = {**c, "pattern": acting + pattern.removeprefix(generic)}
            new.append(c)
        out[name] = {**bundle, "checks": new}
    return out
