"""The recording proxy: an MCP client of the user's server (stdio command or streamable HTTP URL, the real
`mcp` SDK's `Client`) behind the kit's own MCP server (kit.mcp.serve). Every tools/list and tools/call passes
through unchanged and lands in the cassette, merged under a lock with what other sessions (one per agent run
of a stdio server) recorded into the same file. Every upstream call is bounded by the timeout.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED
from pydantic import ValidationError

from kit.errors import KitInputError
from kit.mcp.cassette import McpCassette, locked, tool_differences
from kit.mcp.serve import INTERNAL_ERROR
from kit.names import printable

MAX_PAGES = 100  # a server whose tools/list never stops paging cannot hang the proxy


def describe(target: list[str] | str) -> str:
    return target if isinstance(target, str) else shlex.join(target)


@asynccontextmanager
async def upstream(target: list[str] | str, timeout: float) -> AsyncIterator[Client]:
    """A connected client of the real server, or KitInputError saying why it did not start within `timeout`.

    The client lives in a task of its own, so the timeout on the start never cuts across its task groups."""
    if isinstance(target, list):
        if not target:
            raise KitInputError("no MCP server command after --")
        # The whole environment, not the SDK's default few variables: the server is the user's, run as they would.
        server: Any = StdioServerParameters(command=target[0], args=target[1:], env=dict(os.environ))
    else:
        server = target
    ready, done = anyio.Event(), anyio.Event()
    box: dict[str, Any] = {}

    async def hold() -> None:
        try:
            async with Client(server, read_timeout_seconds=timeout, cache=None) as client:
                box["client"] = client
                ready.set()
                await done.wait()
        except Exception as e:  # any failure to connect is reported, named, below
            box.setdefault("error", e)
        finally:
            ready.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(hold)
        with anyio.move_on_after(timeout):
            await ready.wait()
        if "client" not in box:
            tg.cancel_scope.cancel()
        else:
            try:
                yield box["client"]
            finally:
                done.set()
    if "client" not in box:
        why = _reason(box["error"]) if "error" in box else f"no answer in {timeout:g}s"
        raise KitInputError(f"the MCP server {describe(target)} did not start: {why}")


def _reason(e: BaseException) -> str:
    if isinstance(e, BaseExceptionGroup):
        return "; ".join(_reason(x) for x in e.exceptions)
    return f"{type(e).__name__}: {e}" if str(e) else type(e).__name__


def tool_dict(tool: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = tool.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


async def list_all_tools(client: Client, timeout: float) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        with anyio.fail_after(timeout):
            page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools += [tool_dict(t) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return tools
    raise MCPError(INTERNAL_ERROR, f"tools/list still paging after {MAX_PAGES} pages")


class Passthrough:
    """A backend (kit.mcp.serve.Backend) that passes every call to `client`, bounded by `timeout`."""

    def __init__(self, client: Client, timeout: float) -> None:
        self.client = client
        self.timeout = timeout
        info = client.server_info
        self.name = info.name if info else "kit-mcp"
        self.version = info.version if info else ""
        self.first_listing: list[dict[str, Any]] | None = None
        self.changes: list[str] = []  # how the tools changed between listings, each told once
        self.held: list[dict[str, Any]] | None = None

    async def list_tools(self) -> list[dict[str, Any]]:
        # Each listing passes through as the server gives it; a tool that changed since the first listing of
        # this session (a rug pull, or a server updated mid-run) is told on stderr, naming it.
        if self.held is not None:  # the listing the recorder made at start answers the agent's first
            tools, self.held = self.held, None
            return tools
        try:
            tools = await list_all_tools(self.client, self.timeout)
        except TimeoutError:
            raise MCPError(INTERNAL_ERROR, f"the server did not answer tools/list within {self.timeout:g}s") from None
        except ValidationError as e:
            message = f"the server's tools/list answer is malformed: {e.errors()[0]['msg']}"
            raise MCPError(INTERNAL_ERROR, message) from None
        if self.first_listing is None:
            self.first_listing = tools
        else:
            for line in tool_differences(self.first_listing, tools):
                if line not in self.changes:
                    self.changes.append(line)
                    said = printable(f"kit mcp: the server's tools changed since its first listing: {line}")
                    print(said, file=sys.stderr)
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        try:
            with anyio.fail_after(self.timeout):
                result = await self.client.call_tool(name, arguments)
        except TimeoutError:
            message = f"the server did not answer tools/call {name} within {self.timeout:g}s"
            raise MCPError(INTERNAL_ERROR, message) from None  # never recorded: a replay must not time out too
        except MCPError as e:
            if e.code == CONNECTION_CLOSED:  # the server went away: no answer of the tool's, never recorded
                raise MCPError(INTERNAL_ERROR, f"the server closed the connection during tools/call {name}") from None
            self.answered(name, arguments, error=e.message, code=e.code)
            raise
        except ValidationError as e:
            raise MCPError(INTERNAL_ERROR, f"tools/call {name}: a malformed answer: {e.errors()[0]['msg']}") from None
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        self.answered(name, arguments, result=dumped)
        return dumped

    def answered(self, name: str, arguments: dict[str, Any], **outcome: Any) -> None:
        """What the server answered (a recorder writes it down)."""


class Recorder(Passthrough):
    """Passes calls through and writes each answer to the cassette `out`."""

    def __init__(
        self, client: Client, out: Path, timeout: float, *, overwrite: bool = False, tell: str | None = None
    ) -> None:
        """`tell`: the server's name for the agent, when the agent's process started this one (stdio): told
        that its attempt recorded into `out` (kit.mcp.attempts), so the attempt's end state is kept with it."""
        super().__init__(client, timeout)
        self.out = out
        self.overwrite = overwrite
        self.tell = tell

    async def start(self) -> None:
        """Lists the tools once and writes them: a cassette of another server version is refused, naming
        what differs, unless `overwrite`."""
        tools = await self.list_tools()
        # The agent's first tools/list gets this listing: the server sees as many listings as the agent asks
        # for (a server that changes its tools after the first listing changes them for the agent alike).
        self.held = tools
        with locked(self.out):
            if self.out.exists() and not self.overwrite:
                old = McpCassette.load(self.out)
                diff = tool_differences(old.tools, tools)
                if diff:
                    raise KitInputError(
                        f"{self.out}: recorded from another version of the server ({'; '.join(diff)}): "
                        "record with --overwrite to start a new cassette"
                    )
                cassette = old
            else:
                cassette = McpCassette(self.out)
            cassette.data["server"] = {"name": self.name, "version": self.version}
            cassette.data["tools"] = tools
            cassette.save()

    def answered(self, name: str, arguments: dict[str, Any], **outcome: Any) -> None:
        if self.tell is not None:
            from kit.mcp.attempts import tell_parent

            tell_parent({"server": self.tell, "recorded": str(self.out.resolve())})
            self.tell = None  # once a session
        with locked(self.out):
            cassette = McpCassette.load(self.out)
            cassette.add_call(name, arguments, **outcome)
            cassette.save()
