"""One MCP server over any backend (the recording proxy, a cassette, the hostile server), on stdio or streamable
HTTP on 127.0.0.1, built with the real `mcp` SDK's low-level server. A backend answers tools/list and
tools/call with MCP wire-format dicts; everything else of the protocol (handshake, ping, sessions) is the SDK's.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server  # not from `mcp.server`, whose __init__ loads MCPServer (kit.mcp.sdk)
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from kit.mcp.cassette import unsendable
from kit.names import printable  # tool names and arguments are the server's or the agent's: shown, never obeyed

INTERNAL_ERROR = -32603


class Backend(Protocol):
    name: str
    version: str

    async def list_tools(self) -> list[dict[str, Any]]: ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A CallToolResult as a dict, or MCPError (a JSON-RPC error the client sees as is)."""
        ...


@dataclass
class Served:
    """What the server saw, for the caller's report at exit: each failure already told the client."""

    failures: list[str]


def build_server(backend: Backend, served: Served | None = None) -> Server[Any]:
    served = served if served is not None else Served([])

    async def on_list_tools(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> Any:
        tools = await _guarded(backend.list_tools, served, "tools/list")
        try:
            return types.ListToolsResult(tools=[types.Tool.model_validate(t) for t in tools])
        except ValidationError as e:
            raise _failed(served, f"tools/list: a malformed tool in the answer: {_first(e)}") from None

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Any:
        args = dict(params.arguments or {})
        result = await _guarded(lambda: backend.call_tool(params.name, args), served, f"tools/call {params.name}")
        try:
            answer = types.CallToolResult.model_validate(result)
        except ValidationError as e:
            raise _failed(served, f"tools/call {params.name}: a malformed result: {_first(e)}") from None
        why = unsendable(answer)  # else the SDK fails writing it, and the call is counted nowhere
        if why:
            raise _failed(served, f"tools/call {params.name}: a result that {why}")
        return answer

    return Server(backend.name, version=backend.version, on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def _guarded(fn: Callable[[], Awaitable[Any]], served: Served, what: str) -> Any:
    try:
        return await fn()
    except MCPError as e:
        served.failures.append(f"{what}: {e.message}")
        said = e.message if e.message.startswith("kit mcp") else f"kit mcp: {what}: {e.message}"
        print(printable(said), file=sys.stderr, flush=True)
        raise


def _failed(served: Served, message: str) -> MCPError:
    served.failures.append(message)
    print(printable(f"kit mcp: {message}"), file=sys.stderr, flush=True)
    return MCPError(INTERNAL_ERROR, message)


def _first(e: ValidationError) -> str:
    err = e.errors()[0]
    return f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}"


async def serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    # stdin read on the event loop, not in a worker thread: a SIGTERM's cancellation ends the server at once,
    # where a thread blocked reading the client's open pipe would hold the process (and the upstream) forever.
    lines = _StdinLines.for_fd(0)
    async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]  # read as an AsyncFile is
        await server.run(read, write, server.create_initialization_options())


class _StdinLines:
    """A pipe's lines as the SDK's stdio server reads stdin (`async for line in stdin`), read when the loop says
    the pipe is readable (cancellable) rather than in a thread."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""

    @classmethod
    def for_fd(cls, fd: int) -> _StdinLines | None:
        """None (the SDK reads it itself) unless `fd` is a pipe or a socket the loop can watch."""
        import os
        import stat

        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            return None
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
            return None
        os.set_blocking(fd, False)
        return cls(fd)

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        import os

        while b"\n" not in self.buffer:
            await anyio.wait_readable(self.fd)
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:  # the client closed its end
                if not self.buffer:
                    raise StopAsyncIteration
                line, self.buffer = self.buffer, b""
                return line.decode("utf-8", "replace")
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace") + "\n"


def http_app(server: Server[Any], host: str = "127.0.0.1") -> Any:
    return server.streamable_http_app(host=host)


async def serve_http(
    server: Server[Any], port: int, *, host: str = "127.0.0.1", ready: Callable[[int], None] | None = None
) -> None:
    """Streamable HTTP at http://host:port/mcp until cancelled; `ready(port)` once it listens (port 0: any)."""
    import uvicorn

    config = uvicorn.Config(http_app(server, host), host=host, port=port, log_level="warning", lifespan="on")
    userver = uvicorn.Server(config)

    async def tell_when_up() -> None:
        while not userver.started:
            await anyio.sleep(0.01)
        bound = userver.servers[0].sockets[0].getsockname()[1] if userver.servers else port
        print(f"kit mcp: serving http://{host}:{bound}/mcp", file=sys.stderr, flush=True)
        if ready is not None:
            ready(bound)

    async with anyio.create_task_group() as tg:
        tg.start_soon(tell_when_up)
        await userver.serve()
        tg.cancel_scope.cancel()
