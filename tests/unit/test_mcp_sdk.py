"""kit.mcp.sdk: a `kit mcp` process imports only the SDK modules its mode uses, and the SDK's package namespaces
still hold every name they export (loaded when first asked for)."""

from __future__ import annotations

import json
import subprocess
import sys

CODE = """
import json, sys
from kit.mcp.sdk import lean
first = lean()
import kit.mcp.replay, kit.mcp.hostile
replay = sorted(m for m in ("mcp.client.client", "mcp.server.mcpserver", "mcp.client.session_group") if m in sys.modules)
again = lean()
from mcp import Client, StdioServerParameters, stdio_server
from mcp.server import MCPServer, Server
import mcp.client.client, mcp.server.lowlevel, mcp.server.mcpserver, mcp.server.stdio
same = [Client is mcp.client.client.Client, Server is mcp.server.lowlevel.Server,
        MCPServer is mcp.server.mcpserver.MCPServer, stdio_server is mcp.server.stdio.stdio_server]
try:
    mcp.no_such_name
    missing = "found"
except AttributeError as e:
    missing = str(e)
print(json.dumps({"first": first, "replay": replay, "again": again, "same": same, "missing": missing,
                  "all": sorted(mcp.__all__) == sorted(n for n in mcp.__all__ if hasattr(mcp, n))}))
"""


def test_a_replay_loads_no_client_and_the_namespaces_complete_on_use() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got == {
        "first": True,
        "replay": [],
        "again": False,
        "same": [True, True, True, True],
        "missing": "module 'mcp' has no attribute 'no_such_name'",
        "all": True,
    }
