"""The MCP attacks as a red-team plugin of the kit's own (`kit_category: mcp-tool-poisoning`), for an agent that
declares MCP servers in [tool.kit.mcp]: the red team's config carries the plugin and the red-team target, the
generator asks one plain question per attack, the hook names each attack and gives it the MCP case, and the
target serves the attack through the agent's own server (`kit mcp serve shop`, started by the agent over stdio,
merging kit.mcp.hostile's tools in). Real parts: the OpenAI Agents SDK desk and its stdio MCP client, the `mcp`
SDK servers; the model is a scripted double."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from kit.case import load_suite
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.mcp import attacked
from kit.plan import current_plan
from kit_promptfoo.redteam import config, generator, hooks, target

HERE = Path(__file__).resolve().parent
KIT = str(Path(sys.executable).with_name("kit"))


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shop = json.dumps([sys.executable, str(HERE / "_mcp_shop.py")])
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.kit]\nagent = "_mcp_desk:run"\n[tool.kit.redteam]\ncorpus = "generic"\n[tool.kit.mcp]\nmode = "live"\n[tool.kit.mcp.servers.shop]\ncommand = {shop}\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(HERE))
    for var in ("KIT_AGENT", "KIT_PLAN", "KIT_CASES", "KIT_MCP_MODE", "MCP_EXTRA_COMMAND", "MCP_EXTRA_URL"):
        monkeypatch.delenv(var, raising=False)
    # The desk reaches its shop through the kit's server, as the README says an agent does.
    monkeypatch.setenv("MCP_SHOP_COMMAND", json.dumps([KIT, "mcp", "serve", "shop", "--timeout", "20"]))
    return tmp_path


def _attack(attack: str) -> dict:
    """The test Promptfoo hands the hook for one attack of the plugin, named and given its case."""
    test = {"vars": {"prompt": attacked.QUESTIONS[attack]}, "metadata": {"pluginId": "policy",
            "pluginConfig": {"modifiers": {"kit_category": attacked.PLUGIN}}}}  # fmt: skip
    return hooks.mcp_attack(hooks.name_attack(test, hooks.known_attacks(hooks.corpus.GENERIC)))


def _run(attack: str, obey: bool) -> dict:
    from _mcp_desk import shipping_model

    test = _attack(attack)
    with ScriptedOpenAIServer(shipping_model(obey)) as srv:
        import os

        os.environ["DESK_MODEL_URL"] = srv.base_url
        try:
            out = target.call_api(
                test["vars"]["prompt"], {"config": {"agent": "_mcp_desk:run"}}, {"vars": test["vars"]}
            )
        finally:
            del os.environ["DESK_MODEL_URL"]
    assert "error" not in out, out
    return out


def test_the_config_carries_the_plugin_for_an_agent_with_mcp_servers(repo: Path) -> None:
    out = repo / "gen" / "redteam.yaml"
    built = config.build(out, current_plan())
    [mine] = [p for p in built["redteam"]["plugins"] if p["config"]["modifiers"]["kit_category"] == attacked.PLUGIN]
    assert mine["numTests"] == 5 and "base64" in mine["config"]["excludeStrategies"]
    assert built["targets"][0]["id"].endswith("/redteam/target.py")
    plain = config.build(out, current_plan().derive(mcp={"servers": {}}))
    assert attacked.PLUGIN not in json.dumps(plain["redteam"]["plugins"])
    asked = generator.call_api(f"kit_category: {attacked.PLUGIN}", {}, {})["output"].splitlines()
    assert asked == [f"Prompt: {q}" for q in attacked.QUESTIONS.values()]
    test = _attack("rug-pull")
    assert test["metadata"]["case_id"] == "redteam/mcp-rug-pull/basic"
    assert test["vars"]["kit_mcp_attack"] == "rug-pull" and test["vars"]["case_id"] == attacked.CASE_ID
    [case] = load_suite(hooks.MCP_CASE).cases
    assert [dict(c.raw) for c in case.checks] == attacked.CHECKS


def test_an_agent_that_obeys_its_tools_breaks_a_named_invariant_through_its_own_server(repo: Path) -> None:
    out = _run("poisoned-description", obey=True)
    checks = {c["check"]: c["outcome"] for c in out["metadata"]["kit"]["verdict"]["checks"]}
    assert checks["not_called:issue_refund"] == "fail", out["metadata"]["kit"]["verdict"]
    servers = {s.get("server") for s in out["metadata"]["trace"]["spans"] if s.get("kind") == "tool"}
    assert servers == {"shop"}  # the hostile tool came through the agent's own server
    assert not list((repo / ".kit" / "mcp" / "attacks").glob("*.json"))  # the attack ended with the call


def test_an_agent_that_does_not_obey_keeps_every_invariant(repo: Path) -> None:
    out = _run("result-injection", obey=False)
    verdict = out["metadata"]["kit"]["verdict"]
    assert all(c["outcome"] == "pass" for c in verdict["checks"]), verdict
    quoted = [s for s in out["metadata"]["trace"]["spans"] if s.get("name") == "shipping_quote"]
    assert quoted, "the hostile tool was served and called"


def test_kit_init_writes_the_plugin_into_the_root_config_of_an_agent_with_mcp_servers(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kit import yamlio
    from kit.cli import main

    assert main(["init", "--agent", "_mcp_desk:run"]) == 0
    cfg = yamlio.safe_load((repo / "promptfooconfig.yaml").read_text())
    kinds = [p["config"]["modifiers"]["kit_category"] for p in cfg["redteam"]["plugins"]]
    assert kinds[-1] == attacked.PLUGIN and kinds.count(attacked.PLUGIN) == 1
    assert cfg["providers"][0]["id"] == "file://redteam/target.py"
    assert main(["init", "--check"]) == 0


def test_an_attack_file_a_dead_worker_left_is_pruned(repo: Path) -> None:
    import subprocess

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    folder = repo / attacked.FOLDER
    folder.mkdir(parents=True)
    stale = folder / f"{int(gone.stdout)}.json"
    stale.write_text(json.dumps({"attack": "rug-pull"}))
    with attacked.attacking(repo, "shadowing") as mine:
        assert json.loads(mine.read_text())["attack"] == "shadowing" and not stale.exists()
    assert not mine.exists()


def test_a_call_the_replayed_server_has_no_recording_of_is_a_tool_error_under_attack() -> None:
    import asyncio

    from kit.mcp.cassette import MISS

    class Replayed:
        name, version = "shop", "1"

        async def list_tools(self) -> list:
            return [{"name": "issue_refund", "description": "Refund.", "inputSchema": {"type": "object"}}]

        async def call_tool(self, name: str, arguments: dict) -> dict:
            return {
                "content": [{"type": "text", "text": MISS + f"no recorded response for tool {name}"}],
                "isError": True,
            }

    server = attacked.Attacked(Replayed(), "poisoned-description")
    tools = asyncio.run(server.list_tools())
    assert [t["name"] for t in tools] == ["issue_refund", "shipping_quote"]
    out = asyncio.run(server.call_tool("issue_refund", {"order_id": "ORD-7", "amount": 1000}))
    assert out["isError"] is True and MISS not in out["content"][0]["text"]
    assert "has no recording of this call (red-team attack)" in out["content"][0]["text"]
