"""Replay: the kit's MCP server answering from a cassette (kit.mcp.cassette), with no real server. tools/list
is the recorded list (descriptions included); tools/call is the recorded answer for the same tool and
arguments, and a call with none is a JSON-RPC error naming the tool and the arguments (told on stderr too).
"""

from __future__ import annotations

from typing import Any

from mcp.shared.exceptions import MCPError

from kit.mcp.cassette import CassetteMiss, McpCassette
from kit.mcp.serve import INTERNAL_ERROR

# The JSON-RPC code of a call the cassette cannot answer (the implementation-defined server-error range).
REPLAY_MISS = -32001


class Replayer:
    """A backend (kit.mcp.serve.Backend) over one cassette."""

    def __init__(self, cassette: McpCassette) -> None:
        self.cassette = cassette
        server = cassette.data.get("server") or {}
        self.name = str(server.get("name") or "kit-mcp-replay")
        self.version = str(server.get("version") or "")

    async def list_tools(self) -> list[dict[str, Any]]:
        return self.cassette.tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            entry = self.cassette.reply(name, arguments)
        except CassetteMiss as e:
            raise MCPError(REPLAY_MISS, f"kit mcp replay: {e}") from None
        if "error" in entry:
            raise MCPError(int(entry.get("code", INTERNAL_ERROR)), str(entry["error"]))
        result: dict[str, Any] = entry["result"]
        return result
