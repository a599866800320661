"""Replay: the kit's MCP server answering from a cassette (kit.mcp.cassette), with no real server. tools/list
is the recorded list (descriptions included); tools/call is the recorded answer for the same tool and
arguments. A call with none is told on stderr and answered as a failed call (`isError`) whose text, starting
with MISS, names the tool and the arguments: frameworks pass a tool's failure text on (a JSON-RPC error they
may hide behind a generic message), and the kit reads it back as the run's error (kit.importers.mcp).
"""

from __future__ import annotations

import sys
from typing import Any

from mcp.shared.exceptions import MCPError

from kit.mcp.cassette import MISS, CassetteMiss, McpCassette
from kit.mcp.serve import INTERNAL_ERROR
from kit.names import printable


class Replayer:
    """A backend (kit.mcp.serve.Backend) over one cassette."""

    def __init__(self, cassette: McpCassette, *, tell: str | None = None) -> None:
        """`tell`: the server's name for the agent, when the agent's process started this one (stdio): each miss
        is told to that process too (kit.mcp.attempts), so the attempt hears of it whatever the agent returns."""
        self.cassette = cassette
        server = cassette.data.get("server") or {}
        self.name = str(server.get("name") or "kit-mcp-replay")
        self.version = str(server.get("version") or "")
        self.misses: list[str] = []
        self.tell = tell
        self.told = False

    async def list_tools(self) -> list[dict[str, Any]]:
        return self.cassette.tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if self.tell is not None and not self.told:
            # The attempt's tools ran from this cassette: its end_state checks are judged from the state recorded
            # with it (kit.mcp.attempts), not from a database no tool wrote.
            from kit.mcp.attempts import tell_parent

            tell_parent({"server": self.tell, "replayed": str(self.cassette.path.resolve())})
            self.told = True
        try:
            entry = self.cassette.reply(name, arguments)
        except CassetteMiss as e:
            self.misses.append(str(e))
            print(printable(MISS + str(e)), file=sys.stderr, flush=True)
            if self.tell is not None:
                from kit.mcp.attempts import tell_parent

                tell_parent({"server": self.tell, "miss": str(e)})
            return {"content": [{"type": "text", "text": MISS + str(e)}], "isError": True}
        if "error" in entry:
            raise MCPError(int(entry.get("code", INTERNAL_ERROR)), str(entry["error"]))
        result: dict[str, Any] = entry["result"]
        return result
