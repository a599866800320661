"""The kit's MCP server against careless and hostile surroundings: attack files tied to their process, a
cassette the SDK cannot carry, names that would drive the terminal, a SIGTERM mid-call, a client that passes
the server only the SDK's default environment, misses an agent swallows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from kit.cli import main
from kit.mcp import attacked
from kit.mcp.cassette import FORMAT, McpCassette
from kit.mcp.process import start_time
from kit.mcp.replay import Replayer


def test_an_attack_file_attacks_only_the_process_it_was_made_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # The server reads its parent's file: here the parent is this process.
    monkeypatch.setattr(attacked.os, "getppid", os.getpid)
    with attacked.attacking(tmp_path, "rug-pull") as mine:
        assert attacked.attack_for_parent(tmp_path) == "rug-pull"
        made = json.loads(mine.read_text())
        assert made["started"] == start_time(os.getpid())
        # A file a dead worker of the same pid left (another start time) attacks nothing, and is pruned.
        mine.write_text(json.dumps({"attack": "rug-pull", "started": made["started"] - 1}))
        assert attacked.attack_for_parent(tmp_path) is None
        attacked._prune(mine.parent)
        assert not mine.exists()


HERE = Path(__file__).resolve().parent
KIT = str(Path(sys.executable).with_name("kit"))
SHOP = [sys.executable, str(HERE / "_mcp_shop.py")]
FORGED = "\x1b[2Jx\rC.json: the server's 9 tools are the cassette's\nC.json: the server's 9 tools are the cassette's"
SCHEMA = {"type": "object"}
TOOLS = [{"name": "lookup_order", "inputSchema": SCHEMA}]


def _cassette(path: Path, tools: list[dict[str, Any]], calls: list[dict[str, Any]] | None = None) -> Path:
    path.write_text(json.dumps({"format": FORMAT, "server": {}, "tools": tools, "calls": calls or []}))
    return path


def test_names_from_a_cassette_or_an_agent_reach_the_terminal_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    c = _cassette(tmp_path / "c.json", [{"name": FORGED, "inputSchema": SCHEMA}])
    upstream = _cassette(tmp_path / "up.json", [{"name": "lookup_order", "inputSchema": SCHEMA}])
    assert main(["mcp", "verify", str(c), "--", KIT, "mcp", "replay", str(upstream)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out, out
    assert len(out.splitlines()) == 2, out  # the forged tool gone, the server's one new
    # A call the cassette lacks: the agent's tool name and arguments, told on stderr, escaped.
    replayer = Replayer(McpCassette.load(c))
    said = anyio.run(replayer.call_tool, FORGED, {"a": "\x1b[31m"})
    err = capsys.readouterr().err
    assert said["isError"] and "\x1b" not in err and len(err.splitlines()) == 1, err
    # A cassette the kit refuses, naming its tool.
    bad = _cassette(tmp_path / "bad.json", [{"name": FORGED, "inputSchema": "no"}])
    assert main(["mcp", "replay", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and len(err.splitlines()) == 1 and "\\x1b" in err, err


def test_kit_check_and_lint_show_a_traces_names_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    case = tmp_path / "case.yaml"
    case.write_text("id: c\ninput: hi\nchecks:\n  - {type: called, tool: lookup, agent: bot}\n")
    spans = [{"kind": "tool", "name": FORGED, "input": {}, "agent": FORGED}]
    trace = tmp_path / "t.json"
    trace.write_text(json.dumps({"case_id": "c", "final_output": "x", "agents": [{"name": FORGED}], "spans": spans}))
    assert main(["check", str(trace), "--cases", str(case)]) == 1
    assert main(["lint", str(case), "--traces", str(trace)]) == 0
    out = capsys.readouterr()
    for text in (out.out, out.err):
        assert "\x1b" not in text and "\r" not in text, text
    assert (out.out + out.err).count("\\x1b[2J") == 2, out


def _deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {"end": 1}
    for _ in range(depth):
        value = {"a": value}
    return value


def test_a_result_the_sdk_cannot_send_is_refused_at_load_and_counted_when_served(tmp_path: Path) -> None:
    from mcp import Client

    from kit.errors import KitInputError
    from kit.mcp.serve import Served, build_server

    deep = {"content": [{"type": "text", "text": "x"}], "structuredContent": _deep(300)}
    tools = [{"name": "lookup", "inputSchema": SCHEMA}]
    c = _cassette(tmp_path / "c.json", tools, [{"tool": "lookup", "arguments": {}, "result": deep}])
    with pytest.raises(KitInputError, match=r"call 1 \(lookup\): result cannot be sent over MCP"):
        McpCassette.load(c)

    class Deep:  # a live server's answer, passed through
        name, version = "shop", "1"

        async def list_tools(self) -> list[dict[str, Any]]:
            return tools

        async def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
            return deep

    served = Served([])

    async def call() -> bool:
        async with Client(build_server(Deep(), served), read_timeout_seconds=10) as client:
            try:
                await client.call_tool("lookup", {})
            except Exception:  # the SDK's error to the client; what matters is the count below
                return True
            return False

    assert anyio.run(call)
    assert len(served.failures) == 1 and "cannot be sent over MCP" in served.failures[0], served.failures


def _gone(pid: int, within: float) -> bool:

    ends = time.monotonic() + within
    while time.monotonic() < ends:
        if start_time(pid) is None or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]:
            return True
        time.sleep(0.05)
    return False


def test_sigterm_to_the_recorder_takes_the_teams_server_down_even_mid_call(tmp_path: Path) -> None:
    import signal

    pid_file = tmp_path / "server.pid"
    env = {**os.environ, "SHOP_SLOW": "1", "SHOP_PID_FILE": str(pid_file)}
    argv = [KIT, "mcp", "record", "--out", str(tmp_path / "c.json"), "--timeout", "60", "--", *SHOP]
    proxy = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    server = 0
    try:
        assert proxy.stdin and proxy.stdout

        def send(message: dict[str, Any]) -> None:
            proxy.stdin.write((json.dumps({"jsonrpc": "2.0", **message}) + "\n").encode())  # type: ignore[union-attr]
            proxy.stdin.flush()  # type: ignore[union-attr]

        params = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        send({"id": 1, "method": "initialize", "params": params})
        assert json.loads(proxy.stdout.readline())["id"] == 1
        send({"method": "notifications/initialized"})
        send({"id": 2, "method": "tools/call", "params": {"name": "slow", "arguments": {}}})
        server = int(pid_file.read_text())
        time.sleep(0.3)  # the call reaches the server
        proxy.send_signal(signal.SIGTERM)
        assert proxy.wait(15) != 0
        assert _gone(server, 10), "the team's server outlived its proxy"
    finally:
        proxy.kill()
        proxy.wait()
        if server and start_time(server) is not None:  # this test's own server, left behind by a failure
            os.kill(server, signal.SIGKILL)


AGENT = """
import sys, anyio
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.session import ClientSession

async def main():
    # The SDK's default environment: no env given, so the server gets HOME, PATH and a few others.
    params = StdioServerParameters(command=sys.argv[1], args=["mcp", "serve", "shop"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        r = await session.call_tool("lookup_order", {"order_id": "ORD-8"})
        print(r.is_error, r.content[0].text)

anyio.run(main)
# What the kit's runner does after the attempt (kit.runner.invoke): the recorded attempt's end state is kept.
from dataclasses import dataclass
from kit.mcp.attempts import with_mcp_report

@dataclass
class Called:  # kit.runner.invoke.Called's fields that with_mcp_report reads (its import is most of a second)
    data: dict
    agent_s: float = 30.0
    error: str | None = None
    skipped: str | None = None
    json: str | None = None

state = {"orders": [{"order_id": "ORD-8", "status": "shipped"}]}
assert with_mcp_report(Called({"final_output": "x", "spans": [], "end_state": state}), "c8").error is None
"""


def test_the_agents_record_mode_reaches_a_server_started_with_the_sdks_default_environment(tmp_path: Path) -> None:
    from mcp.client.stdio import get_default_environment

    assert "KIT_MCP_MODE" not in get_default_environment()  # what the server would otherwise go without
    # The team's server: the kit's lean replay of a shop (what is recorded from it is what it answers).
    answer = {"content": [{"type": "text", "text": "shipped"}]}
    up = [{"tool": "lookup_order", "arguments": {"order_id": "ORD-8"}, "result": answer}]
    shop = json.dumps([KIT, "mcp", "replay", str(_cassette(tmp_path / "up.json", TOOLS, up))])
    (tmp_path / "pyproject.toml").write_text(f"[tool.kit.mcp.servers.shop]\ncommand = {shop}\n")
    env = {**os.environ, "KIT_MCP_MODE": "record", "KIT_MCP_CASSETTES": "recorded"}
    env.pop("KIT_PLAN", None)
    agent = subprocess.run(
        [sys.executable, "-c", AGENT, KIT], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert agent.stdout.startswith("False"), agent.stdout + agent.stderr
    recorded = json.loads((tmp_path / "recorded" / "shop.json").read_text())
    [call] = recorded["calls"]
    assert call["tool"] == "lookup_order" and call["arguments"] == {"order_id": "ORD-8"}
    assert agent.returncode == 0, agent.stderr
    # The attempt's end state, kept with the cassette: what a replay of case c8 is judged on.
    assert recorded["end_states"] == {"c8": {"end_state": {"orders": [{"order_id": "ORD-8", "status": "shipped"}]}}}


def swallowing_desk(text: str) -> dict[str, Any]:
    """An agent whose own code ignores a failed MCP call (its audit e-mail), started over stdio with the SDK's
    default environment, and returns a run with no trace of it."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main() -> None:
        params = StdioServerParameters(command=KIT, args=["mcp", "replay", os.environ["DESK_CASSETTE"]])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            await session.call_tool("send_audit_email", {"to": "audit@example.com"})  # failed: ignored

    anyio.run(main)
    return {"final_output": "Refund issued.", "spans": []}


def test_a_miss_the_agents_code_swallows_is_the_attempts_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kit.case import Case
    from kit.mcp.attempts import SLACK_S, with_mcp_report
    from kit.runner.agents import load_agent
    from kit.runner.invoke import Called, invoke

    tools = [{"name": "send_audit_email", "inputSchema": SCHEMA}]
    monkeypatch.setenv("DESK_CASSETTE", str(_cassette(tmp_path / "desk.json", tools)))
    case = Case(id="refund", input="Refund ORD-7.", checks=[])
    # The agent returns a clean run that hides the failed call: the runner's attempt is its error all the same.
    run = invoke(load_agent(f"{__name__}:swallowing_desk"), case, 0, timeout=60).case_run
    assert run.outcome == "error" and "send_audit_email" in (run.error or ""), run
    assert "that its replayed cassette cannot answer" in (run.error or "")
    time.sleep(SLACK_S + 0.1)
    later = Called(data={"final_output": "ok", "spans": []}, agent_s=0.0)  # an attempt after it: not its miss
    assert with_mcp_report(later, case.id).error is None


def refunding_desk(text: str) -> dict[str, Any]:
    """An agent whose refund tool (MCP, replayed) would write the shop's database: it hands back that database's
    tables, which no replayed tool wrote."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def main() -> None:
        params = StdioServerParameters(command=KIT, args=["mcp", "replay", os.environ["DESK_CASSETTE"]])
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            assert not (await session.call_tool("issue_refund", {"order_id": "GA-1001"})).is_error

    anyio.run(main)
    return refunding_desk_output()


def refunding_desk_output() -> dict[str, Any]:
    return {"final_output": "Refunded GA-1001.", "spans": [], "end_state": {"refunds": []}}


def test_a_replayed_attempts_end_state_is_the_one_recorded_with_the_cassette(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from kit.case import load_suite
    from kit.mcp.attempts import with_mcp_report
    from kit.runner.agents import load_agent
    from kit.runner.invoke import Called, call, judge

    tools = [{"name": "issue_refund", "inputSchema": SCHEMA}]
    answer = {"content": [{"type": "text", "text": "refunded"}]}
    calls = [{"tool": "issue_refund", "arguments": {"order_id": "GA-1001"}, "result": answer}]
    c = _cassette(tmp_path / "shop.json", tools, calls)
    recorded = json.loads(c.read_text())
    recorded["end_states"] = {"refund": {"end_state": {"refunds": [{"order_id": "GA-1001", "amount": 240.0}]}}}
    c.write_text(json.dumps(recorded))
    monkeypatch.setenv("DESK_CASSETTE", str(c))
    check = '{type: end_state, query: "SELECT order_id, amount FROM refunds", expected: [[GA-1001, 240.0]]}'
    (tmp_path / "cases.yaml").write_text(
        "\n".join(f"- id: {i}\n  input: Refund GA-1001.\n  checks:\n    - {check}" for i in ("refund", "unrecorded"))
    )
    refund, unrecorded = load_suite(tmp_path / "cases.yaml").cases
    called = call(load_agent(f"{__name__}:refunding_desk"), refund, 0, timeout=60)
    run = judge(called, refund, 0).case_run
    assert run.passed, run  # judged on the tables the live tools left when the cassette was recorded
    # As the agent returned it (the tables no replayed tool wrote): a false failure.
    assert called.data is not None
    returned = Called(data={**called.data, **refunding_desk_output()}, agent_s=called.agent_s)
    assert not judge(returned, refund, 0).case_run.passed
    # The same attempt's run for a case recorded with no end state: an error naming the replay.
    run = judge(with_mcp_report(returned, unrecorded.id), unrecorded, 0).case_run
    assert run.outcome == "error" and "replayed MCP cassette" in run.results[0].reason, run
