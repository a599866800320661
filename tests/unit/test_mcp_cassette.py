"""`kit mcp record|replay|verify` as a user runs them, with the real `mcp` SDK's client on the other side:
the cassette holds the tool list and each call; replay answers from it alone (stdio and streamable HTTP) and
names a call it has no recording for; a cassette of another server version names the tool that differs; a
server that will not start, a malformed message, a bad cassette and a silent server are one-line errors."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client

from kit.errors import KitInputError
from kit.mcp.cassette import CassetteMiss, McpCassette, tool_differences

HERE = Path(__file__).resolve().parent
KIT = str(Path(sys.executable).with_name("kit"))
SHOP = [sys.executable, str(HERE / "_mcp_shop.py")]


def _talk(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    """Lists the tools and makes the calls through the SDK's client: (tool names, each result or error)."""

    async def main() -> tuple[list[str], list[Any]]:
        async with Client(server, read_timeout_seconds=20) as client:
            names = [t.name for t in (await client.list_tools()).tools]
            out: list[Any] = []
            for name, args in calls:
                r = await client.call_tool(name, args)
                out.append((r.is_error, r.structured_content or r.content[0].text))
            return names, out

    return anyio.run(main)


def _kit(*args: str, env: dict[str, str] | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [KIT, *args], capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})}
    )


@pytest.fixture(scope="module")
def cassette(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "shop.json"
    proxy = StdioServerParameters(command=KIT, args=["mcp", "record", "--out", str(path), "--", *SHOP])
    names, results = _talk(proxy, [("lookup_order", {"order_id": "ORD-7"}), ("lookup_order", {"order_id": "ORD-9"})])
    assert names == ["lookup_order", "issue_refund"]
    assert results[0] == (
        False,
        {"order_id": "ORD-7", "status": "delivered", "total": 42.0, "email": "ann@example.com"},
    )
    assert results[1][0] is True and "no order ORD-9" in results[1][1]  # the tool's own failure passes through
    return path


def test_the_cassette_holds_the_tools_with_descriptions_and_each_call(cassette: Path) -> None:
    data = json.loads(cassette.read_text())
    assert data["format"] == "kit-mcp-cassette/1"
    assert data["server"] == {"name": "shop", "version": "1"}
    assert {t["name"]: t["description"] for t in data["tools"]} == {
        "lookup_order": "Look up an order by its id: its status and total.",
        "issue_refund": "Refund an amount on an order.",
    }
    assert [(c["tool"], c["arguments"], c["result"]["isError"]) for c in data["calls"]] == [
        ("lookup_order", {"order_id": "ORD-7"}, False),
        ("lookup_order", {"order_id": "ORD-9"}, True),
    ]


def test_replay_serves_the_cassette_and_names_a_call_it_lacks(cassette: Path) -> None:
    replay = StdioServerParameters(command=KIT, args=["mcp", "replay", str(cassette)])
    calls = [("lookup_order", {"order_id": "ORD-7"}), ("issue_refund", {"amount": 42, "order_id": "ORD-7"})]
    names, results = _talk(replay, calls)
    assert names == ["lookup_order", "issue_refund"]
    assert results[0][1]["status"] == "delivered"
    assert results[1] == (
        True,
        f'kit mcp replay: {cassette}: no recorded response for tool issue_refund with arguments {{"amount":42,"order_id":"ORD-7"}}',
    )


def test_replay_over_streamable_http(cassette: Path) -> None:
    proc = subprocess.Popen([KIT, "mcp", "replay", str(cassette), "--port", "0"], stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        url = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
        assert url, line
        # Keys in another order and 7 spelled 7.0 are the same call.
        _, results = _talk(url.group(), [("lookup_order", {"order_id": "ORD-7"})])
        assert results[0][1]["total"] == 42.0
    finally:
        proc.terminate()
        proc.wait(10)


def test_another_server_version_names_the_tools_that_differ(cassette: Path, shop_url: str, tmp_path: Path) -> None:
    v2 = {"SHOP_VERSION": "2"}
    out = _kit("mcp", "verify", str(cassette), "--", *SHOP, env=v2)
    assert out.returncode == 1, out.stderr
    assert out.stdout.splitlines() == [
        f"{cassette}: tool cancel_order is new",
        f"{cassette}: tool lookup_order: description changed",
    ]
    assert _kit("mcp", "verify", "--url", shop_url, str(cassette)).returncode == 0  # the same version
    assert _kit("mcp", "verify", str(cassette), "--url", shop_url).returncode == 0  # its option after the cassette

    copy = tmp_path / "shop.json"
    copy.write_text(cassette.read_text())
    # One recorder, seen by the SDK's client and by its exit: sh writes kit's exit code after kit's own stderr.
    argv = [KIT, "mcp", "record", "--out", str(copy), "--timeout", "20", "--", *SHOP]
    told = '"$@"; echo "exit $?" >&2'
    proxy = StdioServerParameters(command="sh", args=["-c", told, "sh", *argv], env={**os.environ, **v2})
    # The proxy exits before the handshake: the SDK says connection closed.
    with (tmp_path / "stderr").open("w") as errlog, pytest.raises(Exception):  # noqa: B017
        _talk(stdio_client(proxy, errlog=errlog), [])
    stderr = (tmp_path / "stderr").read_text()
    assert stderr.splitlines()[-1] == "exit 2", stderr
    assert (
        "recorded from another version of the server (tool cancel_order is new; tool lookup_order: description changed)"
        in stderr
    )


def test_a_server_that_does_not_start_is_named() -> None:
    out = _kit("mcp", "record", "--out", "/tmp/never.json", "--", "/nonexistent/server")
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "kit mcp: the MCP server /nonexistent/server did not start: "
        "FileNotFoundError: [Errno 2] No such file or directory: '/nonexistent/server'"
    )


def test_a_malformed_message_is_one_line_and_nothing_hangs() -> None:
    out = _kit(
        "mcp", "record", "--out", "/tmp/never.json", "--timeout", "10", "--", sys.executable, "-c", "print('hello')"
    )
    assert out.returncode == 2
    assert "kit mcp: Failed to parse JSONRPC message from server:" in out.stderr
    assert "Invalid JSON" in out.stderr and "Traceback" not in out.stderr
    assert "did not start" in out.stderr.splitlines()[-1]


def test_a_silent_server_times_out() -> None:
    out = _kit("mcp", "record", "--out", "/tmp/never.json", "--timeout", "1", "--", "sleep", "30", timeout=20)
    assert out.returncode == 2
    assert out.stderr.strip() == "kit mcp: the MCP server sleep 30 did not start: no answer in 1s"


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{", "MCP cassette is not valid JSON"),
        ('{"format": 1}', "not an MCP cassette of format kit-mcp-cassette/1: format is 1"),
        (
            '{"format": "kit-mcp-cassette/1", "tools": [], "calls": [{"tool": "x"}]}',
            "call 1 (x): needs exactly one of result and error",
        ),
        (
            '{"format": "kit-mcp-cassette/1", "tools": [{"name": "x", "inputSchema": 5}], "calls": []}',
            "tool x: inputSchema: Input should be a valid dictionary",
        ),
        ("[" * 100_000, "nested too deeply to read"),
    ],
)
def test_a_bad_cassette_is_named(tmp_path: Path, content: str, says: str) -> None:
    path = tmp_path / "c.json"
    path.write_text(content)
    with pytest.raises(KitInputError, match=re.escape(says)):
        McpCassette.load(path)
    out = _kit("mcp", "replay", str(path))
    assert out.returncode == 2 and says in out.stderr


def test_cassette_keys_and_repeats(tmp_path: Path) -> None:
    c = McpCassette(tmp_path / "c.json")
    c.data["tools"] = [{"name": "t", "inputSchema": {"type": "object"}}]
    c.add_call("t", {"a": 1, "b": [1.0]}, result={"n": 1})
    c.add_call("t", {"b": [1], "a": 1.0}, result={"n": 2})
    c.add_call("t", {"a": 1, "b": [1]}, result={"n": 2})  # the same answer again is not written twice
    assert len(c.data["calls"]) == 2
    assert [c.reply("t", {"b": [1], "a": 1})["result"]["n"] for _ in range(3)] == [1, 2, 2]
    with pytest.raises(CassetteMiss, match="tool u is not in the cassette's tool list"):
        c.reply("u", {})
    assert tool_differences([{"name": "t"}], [{"name": "t", "description": "x"}]) == ["tool t: description changed"]


def test_a_rug_pull_is_told_while_recording(tmp_path: Path) -> None:
    """In front of the red team's rug-pull server over streamable HTTP: the second listing's changed
    description passes through to the agent, and the proxy names the tool that changed."""
    out = tmp_path / "hostile.json"
    argv = [KIT, "mcp", "record", "--out", str(out), "--port", "0", "--", KIT, "mcp", "hostile", "rug-pull"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        url = re.search(r"http://127\.0\.0\.1:\d+/mcp", line)
        assert url, line

        async def listings() -> list[str]:
            async with Client(url.group(), read_timeout_seconds=20) as client:
                first = (await client.list_tools(cache_mode="refresh")).tools[0].description or ""
                second = (await client.list_tools(cache_mode="refresh")).tools[0].description or ""
                return [first, second]

        first, second = anyio.run(listings)
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert "<IMPORTANT>" not in first and "<IMPORTANT>" in second
    assert (
        "kit mcp: the server's tools changed since its first listing: tool shipping_quote: description changed" in err
    )


def test_sessions_recording_at_once_all_land_in_the_cassette(tmp_path: Path, shop_url: str) -> None:
    """One session per agent run: four recorders at once merge into one file under its folder's lock."""
    out = tmp_path / "shop.json"
    proxy = StdioServerParameters(command=KIT, args=["mcp", "record", "--out", str(out), "--url", shop_url])

    async def session(order: str) -> None:
        async with Client(proxy, read_timeout_seconds=30) as client:
            await client.call_tool("lookup_order", {"order_id": order})
            await client.call_tool("issue_refund", {"order_id": order, "amount": 1})

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for order in ("ORD-7", "ORD-8", "ORD-9", "ORD-10"):
                tg.start_soon(session, order)

    anyio.run(main)
    calls = json.loads(out.read_text())["calls"]
    assert len(calls) == 8
    assert {c["arguments"]["order_id"] for c in calls} == {"ORD-7", "ORD-8", "ORD-9", "ORD-10"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shop.json"]  # no lock or temporary file left


def test_a_server_that_dies_mid_session_is_an_error_never_recorded(tmp_path: Path) -> None:
    out = tmp_path / "shop.json"
    proxy = StdioServerParameters(
        command=KIT, args=["mcp", "record", "--out", str(out), "--", *SHOP], env={**os.environ, "SHOP_CRASH": "1"}
    )

    async def main() -> str:
        async with Client(proxy, read_timeout_seconds=30) as client:
            await client.call_tool("lookup_order", {"order_id": "ORD-7"})
            try:
                await client.call_tool("crash", {})
            except Exception as e:  # the proxy's JSON-RPC error
                return str(e)
            return "no error"

    assert anyio.run(main) == "the server closed the connection during tools/call crash"
    assert [c["tool"] for c in json.loads(out.read_text())["calls"]] == ["lookup_order"]
