"""`kit mcp serve NAME`: the one command an agent's MCP configuration names; [tool.kit.mcp] (or KIT_MCP_MODE)
says whether it records the real server, replays the cassette, or passes through."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters

from kit.errors import KitInputError
from kit.mcp.settings import named_server
from kit.settings import load_settings

HERE = Path(__file__).resolve().parent
KIT = str(Path(sys.executable).with_name("kit"))
PROJECT = f"""\
[tool.kit.mcp]
cassettes = "cassettes"
[tool.kit.mcp.servers.shop]
command = [{str(sys.executable)!r}, {str(HERE / "_mcp_shop.py")!r}]
"""


def _lookup(project: Path, mode: str) -> tuple[bool, object]:
    params = StdioServerParameters(
        command=KIT, args=["mcp", "serve", "shop"], cwd=str(project), env={**os.environ, "KIT_MCP_MODE": mode}
    )

    async def main() -> tuple[bool, object]:
        async with Client(params, read_timeout_seconds=20) as client:
            r = await client.call_tool("lookup_order", {"order_id": "ORD-8"})
            return r.is_error, r.structured_content or r.content[0].text

    return anyio.run(main)


def test_one_command_records_then_replays(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT)
    assert _lookup(tmp_path, "record") == (
        False,
        {"order_id": "ORD-8", "status": "shipped", "total": 19.5, "email": "bob@example.com"},
    )
    assert (tmp_path / "cassettes" / "shop.json").is_file()
    assert _lookup(tmp_path, "replay")[1]["status"] == "shipped"  # type: ignore[index]
    assert _lookup(tmp_path, "live")[1]["total"] == 19.5  # type: ignore[index]


def test_settings_errors_are_named(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PROJECT + 'url = "http://127.0.0.1:1/mcp"\n')
    settings = load_settings(root=tmp_path)
    with pytest.raises(KitInputError, match=r"\[tool.kit.mcp.servers.shop\]: give command or url, not both"):
        named_server(settings, "shop")
    with pytest.raises(KitInputError, match=r"has no server 'files' \(servers: shop\)"):
        named_server(settings, "files")
    (tmp_path / "pyproject.toml").write_text('[tool.kit.mcp]\nmode = "sometimes"\n')
    out = subprocess.run([KIT, "mcp", "serve", "shop"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "mcp.mode" in out.stderr, out.stderr
