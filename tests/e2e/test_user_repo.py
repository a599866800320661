"""What a user does, outside the kit's checkout: a folder holding only an agent module and a cases file;
a venv with the kit installed in it by pip (not editable); `kit init`; `make evals`; then, with no
network at all (`unshare -n`), `deepeval test run tests/evals`, `npx promptfoo eval` and `npx promptfoo redteam
run`. The store must hold that agent's runs from the kit's runner, DeepEval and Promptfoo, and the red team's
runs (make evals' and the one typed) must name the repository's own attacks by attack and strategy.

One test, and the one `kit init` repository of the e2e tests: a venv install costs most of a minute even from
pip's cache. Node packages come from the kit's own node_modules (linked, as npm would install the same pinned
versions), so the test needs no registry.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[2]

AGENT = '''\
"""A user's agent: looks the order up, answers with its status."""
import re


def run(text):
    found = re.search(r"ORD-\\d+", text)
    if found is None:  # anything else (the red team's attacks among it) gets a refusal and no tool call
        return {"model": "desk-1", "final_output": "I can only say where an order is.", "finish_reason": "finish", "spans": []}
    order = found.group()
    return {
        "model": "desk-1",
        "final_output": f"Order {order} has shipped.",
        "finish_reason": "finish",
        "spans": [
            {"kind": "llm", "name": "desk-1", "tokens_in": 10, "tokens_out": 5},
            {"kind": "tool", "name": "lookup_order", "input": {"order_id": order}, "output": {"status": "shipped"}},
        ],
    }
'''
CASES = """\
- id: where-is-my-order
  input: "Where is ORD-12?"
  checks:
    - {type: called, tool: lookup_order}
    - {type: arg, tool: lookup_order, key: order_id, expected: ORD-12}
    - {type: contains, text: shipped}
"""


def _offline_ok() -> bool:
    return shutil.which("unshare") is not None and subprocess.run(["unshare", "-n", "true"]).returncode == 0


def sh(cmd: list[str], cwd: Path, *, timeout: float, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    assert done.returncode == 0, (
        f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    )
    return done.stdout


@pytest.mark.skipif(
    not (KIT / "node_modules" / ".bin" / "promptfoo").exists(), reason="no Promptfoo (make test installs it)"
)
@pytest.mark.skipif(sys.platform != "linux", reason="needs unshare -n (a Linux network namespace) to prove offline")
def test_a_users_repository_runs_the_kit_deepeval_and_promptfoo_into_one_store(tmp_path):
    if not _offline_ok():
        pytest.fail("unshare -n is needed to prove the offline commands (run as root, or with user namespaces)")
    repo = tmp_path / "desk"
    (repo / "evals").mkdir(parents=True)
    (repo / "myagent.py").write_text(AGENT)
    (repo / "evals" / "cases.yaml").write_text(CASES)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KIT_", "VIRTUAL_ENV", "PYTHONPATH"))}
    # pip reaches the package index: never through the closed port the kit's .env gives Promptfoo.
    env = {k: v for k, v in env.items() if v != "http://127.0.0.1:9"}

    # The kit's own pip installs into the new venv (`--python`): ensurepip would add 10 s for a pip the flow never
    # uses. Not editable, every dependency resolved and byte-compiled, as a user installs it; pip's own cache makes
    # it a local install. Left uncompiled, every process of the flow (some thirty, under make evals' and the
    # Makefile's PYTHONDONTWRITEBYTECODE) compiled what it imported again: 1 CPU-s more for each that imports the
    # kit, 2.5 for DeepEval, against 7 CPU-s to compile it all once here.
    sh([sys.executable, "-m", "venv", "--without-pip", ".venv"], repo, timeout=120, env=env)
    pip = [sys.executable, "-m", "pip", "--python", ".venv/bin/python", "install", "--quiet"]
    built = subprocess.run([*pip, str(KIT)], cwd=repo, capture_output=True, text=True, timeout=900, env=env)
    assert built.returncode == 0, f"pip install exited {built.returncode}:\n{built.stderr[-4000:]}"
    # The kit builds with nothing its build backend has dated to become an error (a license as a TOML table did).
    dated = [line for line in built.stderr.splitlines() if "BuildBackendWarning" in line and "deprecated" in line]
    assert not dated, dated
    out = sh(
        [".venv/bin/kit", "init", "--agent", "myagent:run", "--cases", "evals/cases.yaml"], repo, timeout=60, env=env
    )
    assert "promptfooconfig.yaml: written" in out and "evals/cases.yaml" not in out.split("written")[0]
    assert (repo / "evals" / "cases.yaml").read_text() == CASES  # the user's cases, untouched

    (repo / "node_modules").mkdir()
    for entry in (KIT / "node_modules").iterdir():
        if not entry.name.startswith(".installed"):
            (repo / "node_modules" / entry.name).symlink_to(entry)
    (repo / "node_modules" / ".kit-installed").touch()  # what `make evals`' npm install would leave

    evals = subprocess.run(["make", "evals"], cwd=repo, capture_output=True, text=True, timeout=900, env=env)
    offline = ["unshare", "-n"]
    deepeval = subprocess.run(
        [*offline, ".venv/bin/deepeval", "test", "run", "tests/evals"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    promptfoo = subprocess.run(
        [*offline, "npx", "--no-install", "promptfoo", "eval", "--no-progress-bar"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    # The root config's red team, typed: kit init's attacks through the kit's generator, each judged by
    # redteam/case.yaml.
    redteam = subprocess.run(
        [*offline, "npx", "--no-install", "promptfoo", "redteam", "run", "--no-progress-bar"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    query = (
        "import json\n"
        "from kit.store import open_store\n"
        "with open_store('.kit/evals.duckdb').connect() as con:\n"
        '    rows = con.execute("SELECT r.source, r.agent, c.case_id, c.passed FROM runs r JOIN case_results c "\n'
        '                       "USING (run_id) ORDER BY r.started_at").fetchall()\n'
        '    red = con.execute("SELECT r.agent, list(DISTINCT c.case_id ORDER BY c.case_id) FROM runs r JOIN "\n'
        "                      \"case_results c USING (run_id) WHERE r.kind = 'redteam' GROUP BY r.run_id, r.agent, \"\n"
        '                      "r.started_at ORDER BY r.started_at").fetchall()\n'
        "print(json.dumps([rows, red]))\n"
    )
    rows, red = json.loads(sh([".venv/bin/python", "-c", query], repo, timeout=60, env=env))
    by_source = {(source, agent, case, passed) for source, agent, case, passed in rows}
    report = (
        f"make evals exited {evals.returncode}:\n{evals.stdout[-3000:]}\n{evals.stderr[-3000:]}\n"
        f"deepeval exited {deepeval.returncode}:\n{deepeval.stdout[-3000:]}\n{deepeval.stderr[-2000:]}\n"
        f"promptfoo exited {promptfoo.returncode}:\n{promptfoo.stdout[-3000:]}\n{promptfoo.stderr[-2000:]}\n"
        f"redteam exited {redteam.returncode}:\n{redteam.stdout[-3000:]}\n{redteam.stderr[-2000:]}\n"
        f"store: {sorted(by_source)}\nred-team runs: {red}"
    )
    for source in ("kit", "deepeval", "promptfoo"):
        assert (source, "myagent:run", "where-is-my-order", True) in by_source, report
    assert deepeval.returncode == 0 and promptfoo.returncode == 0, report
    assert evals.returncode == 0, report
    # Every stage of make evals ran clean in the user's repository (the red team's included).
    summary = (repo / ".kit" / "summary.txt").read_text()
    table = summary.split("== stages", 1)[1].split("\n\n", 1)[0]
    stages = re.findall(r"^  ([\w-]+) +(\S.*?) +[\d.]+ s ", table, re.M)
    assert {name for name, _ in stages} >= {"kit", "deepeval", "promptfoo", "redteam"}, summary
    assert [name for name, outcome in stages if outcome != "passed" and name != "total"] == [], summary

    # The red team: make evals' stage, then the one typed, each on the agent under its label.
    assert redteam.returncode == 0, report
    assert "promptfoo redteam run (myagent:run: your attacks)" in evals.stdout
    [(stage_agent, stage_ids), (typed_agent, ids)] = red
    assert stage_agent == typed_agent == "myagent:run", report
    strategies = {"basic", "base64", "leetspeak", "homoglyph", "jailbreak-templates"}
    assert len(ids) == 4 * len(strategies), ids  # the 4 attacks kit init writes, each under every strategy
    assert {i.split("/")[2] for i in ids} == strategies
    assert not [i for i in ids if "unknown" in i]
    # The repository's own attacks (kit init's example ids), not the kit's generic ones.
    assert {i.split("/")[1] for i in ids} == {"inj-admin-mode", "pii-other-email", "prompt-repeat", "agency-wire"}
    # make evals runs the same red team: its stage stores the same attacks under the same names.
    assert stage_ids == ids
