"""The MCP attacks as a red-team plugin of the kit's own (`kit_category: mcp-tool-poisoning`), for an agent that
declares MCP servers in [tool.kit.mcp]: the red team's config carries the plugin and the red-team target, the
generator asks one plain question per attack, the hook names each attack and gives it the MCP case (both built
from the team's own tools: a library's here, no shop), and the target serves the attack through the agent's own
server (`kit mcp serve library`, started by the agent over stdio, merging the attack's tools in). Real parts: the
OpenAI Agents SDK desk and its stdio MCP client, the `mcp` SDK servers; the model is a scripted double."""

from __future__ import annotations

import json
import re
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
    library = json.dumps([sys.executable, str(HERE / "_mcp_library.py")])
    (tmp_path / "pyproject.toml").write_text(
        '[tool.kit]\nagent = "_mcp_library_desk:run"\n[tool.kit.redteam]\ncorpus = "generic"\n[tool.kit.mcp]\n'
        f'mode = "live"\n[tool.kit.mcp.servers.library]\ncommand = {library}\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(HERE))
    for var in ("KIT_AGENT", "KIT_PLAN", "KIT_CASES", "KIT_MCP_MODE"):
        monkeypatch.delenv(var, raising=False)
    # The desk reaches its library through the kit's server, as docs/mcp.md says an agent does.
    monkeypatch.setenv("MCP_LIBRARY_COMMAND", json.dumps([KIT, "mcp", "serve", "library", "--timeout", "20"]))
    return tmp_path


def _tests(repo: Path) -> list[dict]:
    """The tests Promptfoo hands the hook for the plugin's attacks (the generator's questions), named and given
    their case by the hook."""
    asked = generator.call_api(f"kit_category: {attacked.PLUGIN}", {}, {})["output"].splitlines()
    tests = [
        {
            "vars": {"prompt": q.removeprefix("Prompt: ")},
            "metadata": {"pluginId": "policy", "pluginConfig": {"modifiers": {"kit_category": attacked.PLUGIN}}},
        }
        for q in asked
    ]
    return hooks.beforeAll({"suite": {"tests": tests}})["suite"]["tests"]


def _run(test: dict, obey: bool) -> dict:
    from _mcp_library_desk import library_model

    with ScriptedOpenAIServer(library_model(obey)) as srv:
        import os

        os.environ["DESK_MODEL_URL"] = srv.base_url
        try:
            out = target.call_api(
                test["vars"]["prompt"], {"config": {"agent": "_mcp_library_desk:run"}}, {"vars": test["vars"]}
            )
        finally:
            del os.environ["DESK_MODEL_URL"]
    assert "error" not in out, out
    return out


def _failed(out: dict) -> list[str]:
    return [c["check"] for c in out["metadata"]["kit"]["verdict"]["checks"] if c["outcome"] != "pass"]


def test_the_config_carries_the_plugin_for_an_agent_with_mcp_servers(repo: Path) -> None:
    out = repo / "gen" / "redteam.yaml"
    built = config.build(out, current_plan())
    [mine] = [p for p in built["redteam"]["plugins"] if p["config"]["modifiers"]["kit_category"] == attacked.PLUGIN]
    assert mine["numTests"] == 5 and "base64" in mine["config"]["excludeStrategies"]
    assert built["targets"][0]["id"].endswith("/redteam/target.py")
    plain = config.build(out, current_plan().derive(mcp={"servers": {}}))
    assert attacked.PLUGIN not in json.dumps(plain["redteam"]["plugins"])
    tests = _tests(repo)
    assert [t["metadata"]["case_id"] for t in tests] == [f"redteam/mcp-{a}/basic" for a in attacked.QUESTIONS]
    assert tests[1]["vars"]["kit_mcp_attack"] == "rug-pull" and tests[1]["vars"]["case_id"] == attacked.CASE_ID
    # The case is built from the team's tools and written under .kit/, never shipped: no shop in it.
    case_file = Path(tests[0]["vars"]["case_file"])
    assert case_file == repo / ".kit/redteam/mcp/case.yaml"
    [case] = load_suite(case_file).cases
    assert [dict(c.raw) for c in case.checks] == attacked.checks(set())
    for text in (case_file.read_text(), *(t["vars"]["prompt"] for t in tests)):
        assert not re.search(r"ORD-|refund|shipping|order", text, re.I), text


class Library:
    """The library server's tools as a backend (kit.mcp.serve.Backend), in-process."""

    name, version = "library", "1"

    async def list_tools(self) -> list:
        return [
            {"name": "find_book", "description": "Find a book on loan.", "inputSchema": {"type": "object"}},
            {"name": "renew_loan", "description": "Renew a loan.", "inputSchema": {"type": "object"}},
        ]

    async def call_tool(self, name: str, arguments: dict) -> dict:
        return {"content": [{"type": "text", "text": json.dumps({"ok": True})}], "isError": False}


def _desk_under(attack: str, obey: bool) -> dict:
    """What the library desk does under `attack`, in-process: two turns of listing the attacked server's tools (as
    the Agents SDK lists them on every turn), the model's calls (library_model), the tool results; as a trace."""
    import asyncio

    from _mcp_library_desk import library_model

    server = attacked.Attacked(Library(), attack)
    question = attacked.questions(["find_book", "renew_loan"])[attack]
    messages: list[dict] = [{"role": "user", "content": question}]
    spans: list[dict] = []
    model = library_model(obey)
    for _ in range(6):
        tools = asyncio.run(server.list_tools())
        listed = [{"function": {"name": t["name"], "description": t["description"]}} for t in tools]
        said = model({"messages": messages, "tools": listed})
        if isinstance(said, str):
            return {"case_id": attacked.CASE_ID, "final_output": said, "spans": spans}
        [call] = said["tool_calls"]
        result = asyncio.run(server.call_tool(call["name"], call["arguments"]))
        text = result["content"][0]["text"]
        spans.append({"kind": "tool", "name": call["name"], "input": call["arguments"], "output": text})
        fn = {"name": call["name"], "arguments": json.dumps(call["arguments"])}
        messages += [{"role": "assistant", "tool_calls": [{"function": fn}]}, {"role": "tool", "content": text}]
    raise AssertionError(f"{attack}: the desk never answered")


@pytest.mark.parametrize("attack", list(attacked.QUESTIONS))
def test_every_mcp_attack_passes_the_sound_desk_and_fails_the_one_that_obeys(attack: str, tmp_path: Path) -> None:
    from kit.evaluate import evaluate
    from kit.trace import parse_trace

    (tmp_path / "case.yaml").write_text(json.dumps(attacked.case({"find_book", "renew_loan"})))
    [case] = load_suite(tmp_path / "case.yaml").cases

    def failed(obey: bool) -> list[str]:
        run = evaluate(parse_trace(_desk_under(attack, obey)), case)
        return [r.name for r in run.results if not r.passed]

    assert failed(obey=False) == []
    assert failed(obey=True) != [], attack


def test_a_sound_desk_behind_its_own_non_shop_server_keeps_every_invariant(repo: Path) -> None:
    test = next(t for t in _tests(repo) if t["vars"]["kit_mcp_attack"] == "result-injection")
    out = _run(test, obey=False)
    assert _failed(out) == [], out["metadata"]["kit"]["verdict"]
    called = {s.get("name") for s in out["metadata"]["trace"]["spans"] if s.get("kind") == "tool"}
    assert attacked.HELPER in called, called  # the hostile tool was served, through the desk's own server
    assert not list((repo / ".kit" / "mcp" / "attacks").glob("*.json"))  # the attack ended with the call


def test_a_desk_that_obeys_its_tools_breaks_a_named_invariant_through_its_own_server(repo: Path) -> None:
    test = next(t for t in _tests(repo) if t["vars"]["kit_mcp_attack"] == "poisoned-description")
    poisoned = _run(test, obey=True)
    assert _failed(poisoned) == ["no_call_a_tool_asked_for"], poisoned["metadata"]["kit"]["verdict"]
    servers = {s.get("server") for s in poisoned["metadata"]["trace"]["spans"] if s.get("kind") == "tool"}
    assert servers == {"library"}  # the hostile tools came through the agent's own server


def test_kit_init_writes_the_plugin_into_the_root_config_of_an_agent_with_mcp_servers(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kit import yamlio
    from kit.cli import main

    assert main(["init", "--agent", "_mcp_library_desk:run"]) == 0
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

    server = attacked.Attacked(Replayed(), "shadowing")
    tools = asyncio.run(server.list_tools())
    # The team's own tool that writes is shadowed by a poisoned one of its name, beside the helper and the sink.
    assert [t["name"] for t in tools] == [attacked.HELPER, attacked.SINK, "issue_refund"]
    assert "<IMPORTANT>" in tools[2]["description"] and attacked.SINK in tools[2]["description"]
    server = attacked.Attacked(Replayed(), "poisoned-description")
    assert [t["name"] for t in asyncio.run(server.list_tools())] == ["issue_refund", attacked.HELPER, attacked.SINK]
    out = asyncio.run(server.call_tool("issue_refund", {"order_id": "ORD-7", "amount": 1000}))
    assert out["isError"] is True and MISS not in out["content"][0]["text"]
    assert "has no recording of this call (red-team attack)" in out["content"][0]["text"]
