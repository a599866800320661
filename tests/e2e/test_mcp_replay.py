"""Recorded once, replayed offline: the OpenAI Agents SDK desk (tests/unit/_mcp_desk.py) runs its suite
(tests/data/mcp/desk_cases.yaml, server-scoped checks) through `kit run`, with its MCP server behind
`kit mcp record` (the real shop server, over stdio or streamable HTTP); then the same suite passes with the
server gone, each run's `kit mcp replay` serving the cassette inside a network namespace of its own
(`unshare -n`: loopback only, for the model double); and a change to the agent that makes a call the cassette
has no recording for is an error run naming the call."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "tests" / "unit"
CASES = ROOT / "tests" / "data" / "mcp" / "desk_cases.yaml"
KIT = str(Path(sys.executable).with_name("kit"))
SUITE = [sys.executable, str(UNIT / "_mcp_suite.py"), "--cases", str(CASES), "--no-store", "--pool", "serial", "-v"]


def _netns_ok() -> bool:
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        return False
    probe = subprocess.run(["unshare", "-n", "sh", "-c", "ip link set lo up"], capture_output=True)
    return probe.returncode == 0


needs_netns = pytest.mark.skipif(not _netns_ok(), reason="unshare -n (a network namespace) is not available here")


def _suite(tmp_path: Path, shop: list[str], *, offline: bool = False, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "MCP_SHOP_COMMAND": json.dumps(shop), **env}
    command = SUITE
    if offline:
        command = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *SUITE]
    return subprocess.run(command, env=full, cwd=tmp_path, capture_output=True, text=True, timeout=300)


def _passed(out: subprocess.CompletedProcess[str]) -> None:
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2/2 cases passed every run" in out.stdout


@needs_netns
def test_recorded_over_stdio_then_replayed_offline_and_a_new_call_is_named(tmp_path: Path) -> None:
    cassette = tmp_path / "shop.json"
    shop = [sys.executable, str(UNIT / "_mcp_shop.py")]
    _passed(_suite(tmp_path, [KIT, "mcp", "record", "--out", str(cassette), "--", *shop]))
    recorded = json.loads(cassette.read_text())
    assert [(c["tool"], c["arguments"]) for c in recorded["calls"]] == [
        ("lookup_order", {"order_id": "ORD-7"}),
        ("issue_refund", {"order_id": "ORD-7", "amount": 42.0}),
        ("lookup_order", {"order_id": "ORD-8"}),
    ]

    replay = [KIT, "mcp", "replay", str(cassette)]
    _passed(_suite(tmp_path, replay, offline=True))

    changed = _suite(tmp_path, replay, offline=True, DESK_CHANGE="1")
    assert changed.returncode == 1, changed.stdout + changed.stderr
    assert "0/2 runs passed" in changed.stdout and "2 errors" in changed.stdout
    assert (
        "the agent made an MCP call to server shop that its replayed cassette cannot answer: "
        f'{cassette}: no recorded response for tool lookup_order with arguments {{"order_id":"ORD-0007"}}'
    ) in changed.stdout


@needs_netns
def test_recorded_over_http_then_replayed_over_http_offline(tmp_path: Path, shop_url: str) -> None:
    cassette = tmp_path / "shop.json"
    _passed(_suite(tmp_path, [KIT, "mcp", "record", "--out", str(cassette), "--url", shop_url]))
    # The agent reaches the replay over streamable HTTP inside the namespace: the replay server is started
    # there, beside the suite, and the desk is pointed at its URL.
    script = (
        "ip link set lo up\n"
        '"$KIT" mcp replay "$CASSETTE" --port 8765 >/dev/null 2>replay.err &\n'
        "replay=$!\n"
        "for i in $(seq 200); do grep -q serving replay.err && break; sleep 0.05; done\n"
        'MCP_SHOP_COMMAND= "$@"\n'
        "status=$?\n"
        'kill "$replay"; wait "$replay"\n'
        'exit "$status"\n'
    )
    env = {**os.environ, "KIT": KIT, "CASSETTE": str(cassette), "MCP_SHOP_URL": "http://127.0.0.1:8765/mcp"}
    out = subprocess.run(
        ["unshare", "-n", "sh", "-c", script, "sh", *SUITE],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    _passed(out)
    assert re.search(r"serving http://127\.0\.0\.1:8765/mcp", (tmp_path / "replay.err").read_text())
