"""An MCP cassette: what one MCP server answered, in a plain JSON file (contract in docs/CONTRACT.md).

    {"format": "kit-mcp-cassette/1",
     "server": {"name": ..., "version": ...},          # the server's own serverInfo
     "tools": [{name, description, inputSchema, ...}],  # its tools/list, as the MCP wire format spells it
     "calls": [{"tool": ..., "arguments": {...}, "result": {CallToolResult}} | {..., "error": "..."}],
     "end_states": {case_id: {"end_state": {table: rows}, "end_state_columns": {...}}}}  # optional

Calls are keyed by tool name + canonical arguments (`kit.canonical.canonical`): key order and 1 vs 1.0 never
miss. A key recorded several times replays its results in recorded order and then keeps answering the last,
because every session (one per agent run for a stdio server) replays from the start. A call with no
recording is `CassetteMiss`, naming the tool and the arguments.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kit.canonical import canonical
from kit.errors import KitInputError

# What a replayed call that is not in the cassette answers (a failed tool result), read back by the importers.
MISS = "kit mcp replay: "

FORMAT = "kit-mcp-cassette/1"


class CassetteMiss(LookupError):
    """A tools/call the cassette has no recording for."""


def call_key(tool: str, arguments: dict[str, Any] | None) -> str:
    return tool + " " + canonical(arguments or {})


def tool_differences(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[str]:
    """How two tool lists differ, one line per tool (empty when they are the same)."""
    before = {t.get("name"): t for t in old}
    after = {t.get("name"): t for t in new}
    lines = []
    for name in sorted(set(before) | set(after), key=str):
        if name not in after:
            lines.append(f"tool {name} is gone")
        elif name not in before:
            lines.append(f"tool {name} is new")
        else:
            changed = [
                field
                for field in ("description", "inputSchema", "outputSchema", "annotations")
                if canonical(before[name].get(field)) != canonical(after[name].get(field))
            ]
            if changed:
                lines.append(f"tool {name}: {' and '.join(changed)} changed")
    return lines


class McpCassette:
    def __init__(self, path: str | Path, data: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.data: dict[str, Any] = data or {"format": FORMAT, "server": {}, "tools": [], "calls": []}
        self._replies: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for entry in self.data["calls"]:
            self._replies[call_key(entry["tool"], entry.get("arguments"))].append(entry)
        self._served: dict[str, int] = defaultdict(int)

    @classmethod
    def load(cls, path: str | Path) -> McpCassette:
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise KitInputError(f"{p}: no MCP cassette: record one first (kit mcp record --out {p} -- ...)") from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise KitInputError(f"{p}: MCP cassette is not valid JSON: {exc}") from None
        except RecursionError:
            raise KitInputError(f"{p}: MCP cassette is nested too deeply to read") from None
        problem = _problem(data)
        if problem:
            raise KitInputError(f"{p}: not an MCP cassette of format {FORMAT}: {problem}")
        return cls(p, data)

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.data["tools"])

    @property
    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.data["tools"]]

    # Replay
    def reply(self, tool: str, arguments: dict[str, Any] | None) -> dict[str, Any]:
        """The recorded entry for this call: its `result` (a CallToolResult as JSON) or its `error`."""
        if tool not in self.tool_names:
            raise CassetteMiss(
                f"{self.path}: tool {tool} is not in the cassette's tool list ({', '.join(self.tool_names)}): "
                "the agent calls a tool the recorded server did not have"
            )
        key = call_key(tool, arguments)
        replies = self._replies.get(key)
        if not replies:
            raise CassetteMiss(
                f"{self.path}: no recorded response for tool {tool} with arguments {canonical(arguments or {})}"
            )
        i = min(self._served[key], len(replies) - 1)
        self._served[key] += 1
        return replies[i]

    # Record
    def add_call(
        self,
        tool: str,
        arguments: dict[str, Any] | None,
        *,
        result: Any = None,
        error: str | None = None,
        code: int | None = None,
    ) -> None:
        """One answer: a CallToolResult (`result`, a tool's own failure included: isError) or the JSON-RPC
        error the server answered with (`error`, `code`)."""
        entry: dict[str, Any] = {"tool": tool, "arguments": arguments or {}}
        if error is not None:
            entry["error"] = error
            if code is not None:
                entry["code"] = code
        else:
            entry["result"] = result
        if any(canonical(entry) == canonical(e) for e in self._replies[call_key(tool, arguments)]):
            return  # the same answer again: replay repeats the last one anyway
        self.data["calls"].append(entry)
        self._replies[call_key(tool, arguments)].append(entry)

    # The end state the live tools left, per case (kept from a recorded attempt): what a replayed attempt of
    # that case is judged on, since replayed tools write no database.
    def end_state(self, case_id: str) -> dict[str, Any] | None:
        found = (self.data.get("end_states") or {}).get(case_id)
        return dict(found) if isinstance(found, dict) else None

    def keep_end_state(self, case_id: str, fields: dict[str, Any]) -> None:
        self.data.setdefault("end_states", {})[case_id] = fields

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        tmp.replace(self.path)


def _problem(data: Any) -> str | None:
    if not isinstance(data, dict):
        return f"the file holds a {type(data).__name__}, not an object"
    if data.get("format") != FORMAT:
        return f"format is {data.get('format')!r}"
    if not isinstance(data.get("tools"), list) or not all(
        isinstance(t, dict) and isinstance(t.get("name"), str) for t in data["tools"]
    ):
        return "tools must be a list of objects with a name"
    if not isinstance(data.get("calls"), list):
        return "calls must be a list"
    for i, c in enumerate(data["calls"]):
        if not isinstance(c, dict) or not isinstance(c.get("tool"), str):
            return f"call {i + 1} has no tool name"
        if not isinstance(c.get("arguments", {}), dict):
            return f"call {i + 1} ({c['tool']}): arguments must be an object"
        if ("result" in c) == ("error" in c):
            return f"call {i + 1} ({c['tool']}): needs exactly one of result and error"
    if not isinstance(data.get("server", {}), dict):
        return "server must be an object"
    states = data.get("end_states", {})
    if not isinstance(states, dict) or not all(
        isinstance(v, dict) and isinstance(v.get("end_state"), dict) for v in states.values()
    ):
        return "end_states must map each case id to {end_state: {table: rows}, end_state_columns: ...}"
    return _wire_problem(data)


def _wire_problem(data: dict[str, Any]) -> str | None:
    """What MCP itself would refuse: a tool or a result that is not one (found at load, not mid-run)."""
    import mcp_types as types
    from pydantic import ValidationError

    def first(e: ValidationError) -> str:
        err = e.errors()[0]
        return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"

    for t in data["tools"]:
        try:
            types.Tool.model_validate(t)
        except ValidationError as e:
            return f"tool {t['name']}: {first(e)}"
    for i, c in enumerate(data["calls"]):
        if "result" in c:
            try:
                result = types.CallToolResult.model_validate(c["result"])
            except ValidationError as e:
                return f"call {i + 1} ({c['tool']}): result {first(e)}"
            why = unsendable(result)
            if why:
                return f"call {i + 1} ({c['tool']}): result {why}"
        elif not isinstance(c["error"], str) or not isinstance(c.get("code", 0), int):
            return f"call {i + 1} ({c['tool']}): error must be a message (and code an integer)"
    return None


def unsendable(result: Any) -> str | None:
    """Why the MCP SDK could not send this CallToolResult (a model) as its JSON-RPC answer (nested deeper than its
    serializer goes, say), or None: the answer is written as the SDK writes it."""
    import mcp_types as types

    try:
        wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
        types.JSONRPCResponse(jsonrpc="2.0", id=0, result=wire).model_dump_json(by_alias=True, exclude_unset=True)
    except (ValueError, RecursionError) as e:  # pydantic's serialization errors are ValueErrors
        return f"cannot be sent over MCP: {' '.join(str(e).split())[:200]}"
    return None


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Held while a recorder merges into the file: several sessions (one per agent run) record at once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    # The folder is the lock (a lock file would be left beside the cassette, in the user's repository).
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock
