"""`kit mcp record|replay|verify|serve` (contract in docs/CONTRACT.md): the kit's MCP server in front of a
tool server, on stdio (what an agent launches) or streamable HTTP on 127.0.0.1 (`--port`).

    kit mcp record --out C.json -- python -m myserver     record every tools/list and tools/call
    kit mcp record --out C.json --url http://host/mcp      the same for a streamable HTTP server
    kit mcp replay C.json [--port 8765]                    serve the cassette: no real server
    kit mcp verify C.json -- python -m myserver            exit 1 naming each tool that differs
    kit mcp hostile rug-pull                               a malicious server for the red team
    kit mcp serve NAME                                     [tool.kit.mcp]: record, replay or pass through
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kit.errors import KitInputError
from kit.names import printable


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    rec = sub.add_parser("record", help="stand in front of a server and write every call to a cassette")
    rec.add_argument("--out", required=True, metavar="CASSETTE", help="the cassette file (JSON)")
    rec.add_argument("--overwrite", action="store_true", help="start a new cassette even if the tools differ")
    _upstream_args(rec)
    _serving_args(rec)
    rep = sub.add_parser("replay", help="serve a cassette: every recorded call, and a loud error for any other")
    rep.add_argument("cassette", metavar="CASSETTE")
    _serving_args(rep)
    ver = sub.add_parser("verify", help="compare a cassette's tool list with the server's (exit 1 if they differ)")
    ver.add_argument("cassette", metavar="CASSETTE")
    _upstream_args(ver)
    ver.add_argument("--timeout", type=float, metavar="SECONDS", help="bound on every MCP call")
    hos = sub.add_parser("hostile", help="a malicious MCP server for the red team (kit.mcp.hostile)")
    attacks = "poisoned-description, rug-pull, shadowing, result-injection or exfiltration"
    hos.add_argument("attack", metavar="ATTACK", help=attacks)
    _serving_args(hos)
    srv = sub.add_parser("serve", help="the server NAME of [tool.kit.mcp], in the settings' mode")
    srv.add_argument("name", metavar="NAME")
    srv.add_argument("--mode", choices=("live", "record", "replay"), help="overrides the settings' mode")
    _serving_args(srv)


def _upstream_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", metavar="URL", help="a streamable HTTP server, instead of a command after --")
    p.add_argument("server", nargs=argparse.REMAINDER, metavar="-- COMMAND", help="the stdio server's command")


def _serving_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT (0: any)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="bound on every MCP call (agent_timeout)")


def main(args: argparse.Namespace) -> int:
    # Whether the SDK is there, without importing it (most of a second): a bad cassette or setting is told at once.
    import importlib.util

    try:
        found = importlib.util.find_spec("mcp") is not None
    except ImportError:
        found = False
    if not found:
        raise KitInputError("kit mcp needs the MCP SDK, which is not installed: pip install 'agent-eval-kit[mcp]'")
    from kit.mcp.sdk import lean

    lean()  # each mode then imports only the SDK modules it uses (a replay: no client, no MCPServer)
    _hold_gc()
    try:
        return _main(args)
    except KitInputError as e:  # it may name a tool of a cassette or a server: shown, never obeyed
        raise KitInputError(
            printable(e.message), file=e.file and printable(e.file), case=e.case and printable(e.case), check=e.check
        ) from None
    finally:
        _loaded()


def _main(args: argparse.Namespace) -> int:
    import anyio

    settings = _settings(args)
    _one_line_sdk_logs()
    timeout = args.timeout if args.timeout is not None else settings.agent_timeout
    if not 0 < timeout <= 86400:
        raise KitInputError(f"--timeout must be above 0 and at most 86400 seconds, got {timeout:g}")
    named = _named(args, settings) if args.action == "serve" else None
    try:
        code: int = anyio.run(_run, args, named, timeout)
    except BaseExceptionGroup as group:  # a KitInputError from inside the server's task groups: the first one
        raise _first_input_error(group) or group from None
    except KeyboardInterrupt:
        return 130
    return code


def _settings(args: argparse.Namespace) -> Any:
    """The settings, once: the plan document's (KIT_PLAN) or the project's with the KIT_* variables; `serve`'s
    with what the agent that started it was run with (kit.settings.agent_server_settings)."""
    # kit.settings, not kit.plan: a replay server starts on every agent run
    from kit.settings import agent_server_settings, current_settings

    return agent_server_settings(os.environ) if args.action == "serve" else current_settings(os.environ)


@dataclass(frozen=True)
class _Named:
    """`kit mcp serve NAME` resolved before serving: the server, its mode and the red team's attack, if any."""

    server: Any  # kit.mcp.settings.NamedServer
    mode: str
    attack: str | None


def _named(args: argparse.Namespace, settings: Any) -> _Named:
    from kit.mcp.attacked import attack_for_parent
    from kit.mcp.settings import named_server
    from kit.settings import project_root

    server = named_server(settings, args.name)
    mode = args.mode or server.mode
    # The red team attacking the agent that started this server (kit.mcp.attacked): never while recording.
    attack = attack_for_parent(project_root(settings)) if args.port is None and mode != "record" else None
    return _Named(server, mode, attack)


# The SDK's import builds some 500 pydantic classes. With the cyclic GC on, its full collections scan that
# growing heap again and again during the import, and once more at exit; none of it is garbage (it lives as
# long as the process). So the GC waits until the mode's modules are loaded, then leaves what they made out of
# every later collection (gc.freeze): a third of a replay server's CPU. What serving creates is collected as
# before.
_gc_held = False


def _hold_gc() -> None:
    global _gc_held
    if gc.isenabled():  # a caller that turned it off keeps it off
        gc.disable()
        _gc_held = True


def _loaded() -> None:
    """The mode's modules are imported (once; before any upstream connection or session)."""
    global _gc_held
    if _gc_held:
        _gc_held = False
        gc.freeze()
        gc.enable()


class _OneLine(logging.Handler):
    """The SDK's warnings (a malformed message from the server, a failed handler) as one line on stderr, with
    the exception's own first line and no traceback."""

    def emit(self, record: logging.LogRecord) -> None:
        line = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            detail = " ".join(str(record.exc_info[1]).split())
            line += f": {detail[:300]}"
        print(printable(f"kit mcp: {line}"), file=sys.stderr, flush=True)


def _one_line_sdk_logs() -> None:
    sdk = logging.getLogger("mcp")
    sdk.handlers[:] = [_OneLine(logging.WARNING)]
    sdk.propagate = False


def _first_input_error(group: BaseExceptionGroup[Any]) -> KitInputError | None:
    for e in group.exceptions:
        if isinstance(e, KitInputError):
            return e
        if isinstance(e, BaseExceptionGroup) and (found := _first_input_error(e)):
            return found
    return None


def _target(args: argparse.Namespace) -> list[str] | str:
    command = list(args.server or [])
    # The command takes every word after the positionals, so `verify C.json --url U` hands `--url U` to it.
    if command[:1] == ["--url"] and len(command) >= 2 and not args.url:
        args.url, command = command[1], command[2:]
    elif command[:1] and command[0].startswith("--url=") and not args.url:
        args.url, command = command[0].removeprefix("--url="), command[1:]
    if command[:1] == ["--"]:
        command = command[1:]
    if args.url and command:
        raise KitInputError("give the server as --url or as a command after --, not both")
    if args.url:
        return str(args.url)
    if not command:
        raise KitInputError("no MCP server: give its command after -- (stdio) or --url (streamable HTTP)")
    return command


async def _run(args: argparse.Namespace, named: _Named | None, timeout: float) -> int:
    """The action, ended by SIGTERM or SIGHUP as by an interrupt: the action is cancelled where it is (a call in
    flight included), so the upstream server the SDK started goes down with this process (the SDK stops it even
    under cancellation), and a cassette is left as its last whole write. Exit 128 + the signal's number."""
    import anyio

    stopped: list[int] = []
    code = 1
    async with anyio.create_task_group() as tg:

        async def on_signal(*, task_status: Any = anyio.TASK_STATUS_IGNORED) -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGHUP) as received:
                task_status.started()
                async for signum in received:
                    stopped.append(int(signum))
                    tg.cancel_scope.cancel()
                    return

        if threading.current_thread() is threading.main_thread():  # signals reach the main thread alone
            await tg.start(on_signal)
        code = await _action(args, named, timeout)
        tg.cancel_scope.cancel()
    if stopped:
        print(f"kit mcp {args.action}: stopped by signal {stopped[0]}", file=sys.stderr)
        return 128 + stopped[0]
    return code


async def _action(args: argparse.Namespace, named: _Named | None, timeout: float) -> int:
    if args.action == "record":
        out = Path(args.out)
        tell = out.stem if args.port is None else None
        return await _record(_target(args), out, timeout, args.port, overwrite=args.overwrite, tell=tell)
    if args.action == "replay":
        return await _replay(Path(args.cassette), args.port)
    if args.action == "verify":
        return await _verify(Path(args.cassette), _target(args), timeout)
    if args.action == "hostile":
        from kit.mcp.hostile import HostileServer

        return await _serve(HostileServer(args.attack), args.port, "hostile")
    assert named is not None
    return await _serve_named(args, named, timeout)


async def _record(
    target: list[str] | str, out: Path, timeout: float, port: int | None, *, overwrite: bool, tell: str | None = None
) -> int:
    from kit.mcp.proxy import Recorder, upstream

    _loaded()
    async with upstream(target, timeout) as client:
        recorder = Recorder(client, out, timeout, overwrite=overwrite, tell=tell)
        await recorder.start()
        return await _serve(recorder, port, "record")


async def _replay(path: Path, port: int | None, attack: str | None = None, name: str | None = None) -> int:
    from kit.mcp.cassette import McpCassette

    cassette = McpCassette.load(path)  # before the SDK's server is imported: a bad cassette is told at once
    from kit.mcp.replay import Replayer

    # Started by the agent over stdio: each miss is told to the agent's process too (its attempt's error). Not
    # under a red-team attack, where a miss is the attack's doing and answered as a tool error (kit.mcp.attacked).
    tell = (name or str((cassette.data.get("server") or {}).get("name") or path.stem)) if port is None else None
    return await _serve(Replayer(cassette, tell=tell if attack is None else None), port, "replay", attack)


async def _verify(path: Path, target: list[str] | str, timeout: float) -> int:
    from kit.mcp.cassette import McpCassette, tool_differences
    from kit.mcp.proxy import describe, list_all_tools, upstream

    cassette = McpCassette.load(path)
    _loaded()
    async with upstream(target, timeout) as client:
        try:
            tools = await list_all_tools(client, timeout)
        except TimeoutError:
            raise KitInputError(
                f"the MCP server {describe(target)} did not answer tools/list in {timeout:g}s"
            ) from None
    diff = tool_differences(cassette.tools, tools)
    for line in diff:
        print(printable(f"{path}: {line}"))
    if not diff:
        print(printable(f"{path}: the server's {len(tools)} tools are the cassette's"))
    return 1 if diff else 0


async def _serve_named(args: argparse.Namespace, named: _Named, timeout: float) -> int:
    server, mode, attack = named.server, named.mode, named.attack
    if mode == "replay":
        return await _replay(server.cassette, args.port, attack, server.name)
    if server.target is None:
        raise KitInputError(f"[tool.kit.mcp.servers.{args.name}]: mode {mode} needs the server's command or url")
    if mode == "record":
        tell = server.name if args.port is None else None
        return await _record(server.target, server.cassette, timeout, args.port, overwrite=False, tell=tell)
    from kit.mcp.proxy import Passthrough, upstream

    _loaded()
    async with upstream(server.target, timeout) as client:
        return await _serve(Passthrough(client, timeout), args.port, "live", attack)


async def _serve(backend: Any, port: int | None, what: str, attack: str | None = None) -> int:
    from kit.mcp.serve import Served, build_server, serve_http, serve_stdio

    if attack is not None:
        from kit.mcp.attacked import Attacked

        backend = Attacked(backend, attack)

    served = Served([])
    server = build_server(backend, served)
    _loaded()
    if port is None:
        await serve_stdio(server)
    else:
        await serve_http(server, port)
    failures = served.failures + [f"not in the cassette: {m}" for m in getattr(backend, "misses", [])]
    if failures:
        print(f"kit mcp {what}: {len(failures)} failed MCP calls:", file=sys.stderr)
        for line in failures:
            print(f"  {printable(line)}", file=sys.stderr)
        return 1
    return 0
