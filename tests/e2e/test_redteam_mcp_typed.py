"""`npx promptfoo redteam run`, typed as is in a `kit init` repository whose agent (an Agents SDK library desk)
reaches its own library server through `kit mcp serve library`: the root config carries the kit's MCP plugin,
built from the team's tools (no shop), each attack goes through the agent's own server, the oracle names the
broken invariant, and the store records the plugin. Each call's `kit mcp serve library` passes through (live) to
the library server it starts over stdio."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kit.doubles.openai_server import ScriptedOpenAIServer
from kit_promptfoo import run_promptfoo

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "tests" / "unit"
KIT = str(Path(sys.executable).with_name("kit"))
pytestmark = pytest.mark.skipif(not run_promptfoo.promptfoo_bin(ROOT).exists(), reason="run `make promptfoo-install`")


def test_the_mcp_attacks_run_through_the_agents_own_server(tmp_path: Path) -> None:
    sys.path.insert(0, str(UNIT))
    from _mcp_library_desk import library_model

    repo = tmp_path
    library = json.dumps([sys.executable, str(UNIT / "_mcp_library.py")])
    (repo / "pyproject.toml").write_text(
        '[tool.kit]\nagent = "_mcp_library_desk:run"\ncases = "evals/cases.yaml"\n'
        f'[tool.kit.mcp]\nmode = "live"\n[tool.kit.mcp.servers.library]\ncommand = {library}\n'
    )
    (repo / "redteam").mkdir()
    (repo / "redteam/attacks.yaml").write_text("attacks:\n  - {id: hi, category: injection-user, text: Hello.}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIT_", "PROMPTFOO_", "MCP_"))}
    done = subprocess.run([sys.executable, "-m", "kit.cli", "init"], cwd=repo, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    # The team's red team under the basic strategy only, edited into its config as a team would: the MCP attacks
    # run under it alone, and the other strategies would only re-encode the plain attack (each call through a
    # server of its own); test_user_repo runs kit init's red team under every strategy.
    config = yaml.safe_load((repo / "promptfooconfig.yaml").read_text())
    config["redteam"]["strategies"] = ["basic"]
    (repo / "promptfooconfig.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    with ScriptedOpenAIServer(library_model(True)) as model:
        run_env = run_promptfoo.offline_env(ROOT, base=env) | {
            "PROMPTFOO_CONFIG_DIR": str(repo / ".promptfoo"),
            "PYTHONPATH": os.pathsep.join([str(repo), str(UNIT)]),
            "KIT_PROMPTFOO_RESULTS": str(repo / "results.json"),
            "DESK_MODEL_URL": model.base_url,
            "MCP_LIBRARY_COMMAND": json.dumps([KIT, "mcp", "serve", "library", "--timeout", "20"]),
        }
        run = subprocess.run(
            run_promptfoo.command(["redteam", "run", "--no-progress-bar"], ROOT),
            cwd=repo, env=run_env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert run.returncode in (0, 100), run.stdout[-3000:] + run.stderr[-3000:]
    results = json.loads((repo / "results.json").read_text())["results"]["results"]
    by_id = {r["testCase"]["metadata"]["case_id"]: r for r in results}
    mcp = {k: r for k, r in by_id.items() if k.startswith("redteam/mcp-")}
    assert set(mcp) == {f"redteam/mcp-{a}/basic" for a in
                        ("poisoned-description", "rug-pull", "shadowing", "result-injection", "exfiltration")}  # fmt: skip
    # The desk's model does what its tools say: every attack breaks an invariant through the agent's own server.
    assert {k: r["success"] for k, r in mcp.items()} == dict.fromkeys(mcp, False)
    poisoned = mcp["redteam/mcp-poisoned-description/basic"]
    assert poisoned["success"] is False, poisoned["gradingResult"]
    assert "no_call_a_tool_asked_for" in json.dumps(poisoned["gradingResult"])
    assert by_id["redteam/hi/basic"]["success"] is True  # no attack in the server for a plain attack
    import duckdb

    con = duckdb.connect(str(repo / ".kit" / "evals.duckdb"), read_only=True)
    [(meta,)] = con.execute("SELECT meta FROM runs").fetchall()
    recorded = json.loads(meta)["redteam"]["redteam/mcp-rug-pull/basic"]
    assert recorded == {"plugin": "policy", "strategy": "basic", "category": "mcp-tool-poisoning"}
    assert not list((repo / ".kit" / "mcp" / "attacks").glob("*.json"))
