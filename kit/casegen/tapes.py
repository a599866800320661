"""The tools' answers in the trace as recordings the kit replays.

- Calls that went to an MCP server (a tool span with `server`): one MCP cassette per server
  (`kit.mcp.cassette`, served with no server by `kit mcp replay` or `kit mcp serve NAME` in replay mode; a
  call it has no recording for is a failed call naming it, and the run an error).
- Function tools (a tool span without `server`): the kit's tool cassette (`kit.agent.cassette`): the reference
  agent replays it (the case's `cassette:`), a miss is `ReplayMiss`. A user's own function tools are the user's
  code: the kit cannot answer for them unless that code reads the cassette (`Cassette.load(path).tool_response`).
"""

from __future__ import annotations

import json
from typing import Any

from kit.agent.cassette import FORMAT as TOOL_FORMAT
from kit.agent.cassette import Cassette
from kit.mcp.cassette import McpCassette
from kit.trace import Trace


def function_calls(trace: Trace) -> list[Any]:
    return [s for s in trace.tool_calls if s.server is None]


def mcp_servers(trace: Trace) -> list[str]:
    return list(dict.fromkeys(s.server for s in trace.tool_calls if s.server is not None))


def tool_cassette(trace: Trace, case_id: str, origin: str) -> dict[str, Any]:
    """The kit's tool cassette of the trace's function-tool calls, in the order they ran."""
    tape = Cassette("unsaved")
    for s in function_calls(trace):
        tape.add_tool(s.name or "", dict(s.input), s.output, None if s.error is None else str(s.error))
    return {
        "format": TOOL_FORMAT,
        "case_id": case_id,
        "recorded_with": {"from_trace": origin},
        "tools": tape.data["tools"],
        "model": [],
        "end_state_changes": {},
    }


def _text(output: Any) -> str:
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)


def _schema(schemas: dict[str, Any], tool: str) -> dict[str, Any]:
    """The tool's argument schema from tools.json, as MCP wants it (an object schema), else any object."""
    schema = schemas.get(tool)
    if isinstance(schema, dict) and schema.get("type") == "object":
        return {k: v for k, v in schema.items() if k != "effect"}
    return {"type": "object"}


def mcp_cassette(trace: Trace, server: str, schemas: dict[str, Any]) -> dict[str, Any]:
    """An MCP cassette of the calls the trace made to `server`: each answer as the CallToolResult of its text
    (a failed call as `isError`), the tools it called as its tool list."""
    tape = McpCassette("unsaved")
    tape.data["server"] = {"name": server, "version": "from-trace"}
    names: list[str] = []
    for s in trace.tool_calls:
        if s.server != server:
            continue
        name = s.name or ""
        if name not in names:
            names.append(name)
        failed = s.error is not None
        text = str(s.error) if failed else _text(s.output)
        tape.add_call(name, dict(s.input), result={"content": [{"type": "text", "text": text}], "isError": failed})
    tape.data["tools"] = [{"name": n, "inputSchema": _schema(schemas, n)} for n in names]
    return tape.data


def dumped(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False, default=str) + "\n"
