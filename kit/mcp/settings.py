"""A server named in [tool.kit.mcp] (kit.settings.McpSettings): what `kit mcp serve NAME` stands in front of,
and in which mode (`live`: pass through, `record`: pass through and write the cassette, `replay`: the
cassette alone)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.errors import KitInputError


@dataclass(frozen=True)
class NamedServer:
    name: str
    mode: str
    cassette: Path
    target: list[str] | str | None  # the command (stdio) or the URL (streamable HTTP); None: replay only


def named_server(settings: Any, name: str) -> NamedServer:
    mcp = settings.mcp
    server = mcp.servers.get(name)
    if server is None:
        known = ", ".join(sorted(mcp.servers)) or "none"
        raise KitInputError(f"[tool.kit.mcp.servers] has no server {name!r} (servers: {known})")
    if server.command is not None and server.url is not None:
        raise KitInputError(f"[tool.kit.mcp.servers.{name}]: give command or url, not both")
    if server.command == []:
        raise KitInputError(f"[tool.kit.mcp.servers.{name}]: command is empty")
    target: list[str] | str | None = list(server.command) if server.command else server.url
    from kit.names import file_in

    try:
        cassette = file_in(Path(mcp.cassettes), name, ".json")
    except ValueError as e:
        raise KitInputError(f"[tool.kit.mcp.servers]: {e}") from None
    return NamedServer(name, mcp.mode, cassette, target)
