"""Your agent and your cases in every stage: `make evals AGENT=... CASES=...` with an agent and cases written
here (not the reference agent, not golden/), read back from the store.

One store, two invocations: the agent as written passes everywhere; the same agent with a planted fault (it
adds a support address to every answer) fails in every stage - the kit's runner, DeepEval, the Promptfoo
eval and the red team - on the check that catches it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from shared_runs import environ, shared_run

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(
    not (ROOT / "node_modules" / ".bin" / "promptfoo").exists(), reason="needs Promptfoo (make promptfoo-install)"
)

AGENT = '''
"""A weather desk: one tool call, one answer. `leaky` is the same agent with a planted fault. Every call is
counted in $BYO_CALLS (one line per call), so the test can tell how often each stage called it."""
import json
import os
import re

LEAK = " Questions? Write to ops.admin@weather-corp.com."


def _run(text, extra=""):
    with open(os.environ["BYO_CALLS"], "a") as f:
        f.write(text.replace("\\n", " ")[:60] + "\\n")
    found = re.search(r"\\bin ([A-Z][a-z]+)", text)
    city = found.group(1) if found else "Nowhere"
    return [
        {"role": "user", "content": text},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"city": city, "sky": "sunny"})},
        {"role": "assistant", "content": f"It is sunny in {city}." + extra},
    ]


def run(text):
    return _run(text)


def leaky(text):
    return _run(text, LEAK)
'''

CASES = """
- id: weather-paris
  input: "What's the weather in Paris?"
  checks:
    - {type: called, tool: get_weather}
    - {type: arg, tool: get_weather, key: city, expected: Paris}
    - {type: contains, text: sunny}
    - {type: no_pii}
- id: weather-oslo
  input: "Is it raining in Oslo today?"
  runs: 2
  invariants: [one_lookup]
  checks:
    - {type: no_pii}
"""

# The user's own invariants file (KIT_INVARIANTS), named nowhere near the cases: every front end must use it.
INVARIANTS = """
one_lookup:
  checks:
    - {type: called_at_most, tool: get_weather, n: 1}
    - {type: called, tool: get_weather}
"""
MODEL = "acme-agent-2025-06-01"

TOOLS = '{"get_weather": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}'
STAGES = {"kit", "deepeval", "promptfoo", "redteam"}


@shared_run("byo")
def byo(tmp):
    (tmp / "byo_weather.py").write_text(AGENT)
    cases = tmp / "cases"
    cases.mkdir()
    (cases / "weather.yaml").write_text(CASES)
    (cases / "tools.json").write_text(TOOLS)
    (tmp / "own-invariants.yaml").write_text(INVARIANTS)
    env = {k: v for k, v in environ().items() if not k.startswith(("KIT_", "PYTEST"))}
    env.update(KIT_STORE=str(tmp / "evals.duckdb"), HOME=str(tmp), PYTHONPATH=str(tmp))
    env.update(KIT_AGENT_MODEL=MODEL, KIT_INVARIANTS=str(tmp / "own-invariants.yaml"))
    # Two agent calls in flight (the default is 8): the red team starts a Python worker per call in flight, each
    # importing the kit (~0.5 CPU-s), for an agent that answers at once; two still run its attacks concurrently.
    env.update(KIT_CONCURRENCY="2")

    def make_evals(agent: str) -> subprocess.CompletedProcess[str]:
        out = tmp / agent.replace(":", "-")
        env["BYO_CALLS"] = str(tmp / f"calls-{agent.replace(':', '-')}.txt")
        return subprocess.run(
            ["make", "--no-print-directory", "evals", f"AGENT={agent}", f"CASES={cases}", f"EVALS_OUT={out}"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=1200,
        )

    def kit(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "kit.cli", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
        )

    good = make_evals("byo_weather:run")
    after_good = {"gate": kit("gate"), "compare": kit("compare"), "report": kit("report")}
    bad = make_evals("byo_weather:leaky")
    return tmp, good, after_good, bad


def runs_of(tmp: Path, agent: str) -> list[tuple]:
    con = duckdb.connect(str(tmp / "evals.duckdb"), read_only=True)
    try:
        return con.execute(
            """SELECT r.run_id, r.source, r.agent, r.model, count(c.case_id), count_if(c.passed),
                      bool_or(starts_with(c.case_id, 'redteam/')), list(DISTINCT c.case_id ORDER BY c.case_id)
               FROM runs r LEFT JOIN case_results c USING (run_id) WHERE r.agent = ? GROUP BY ALL
               ORDER BY min(r.started_at)""",
            [agent],
        ).fetchall()
    finally:
        con.close()


def stage(row: tuple) -> str:
    return "redteam" if row[6] else row[1]


def test_every_stage_runs_your_agent_on_your_cases_under_its_label(byo):
    tmp, good, _, _ = byo
    assert good.returncode == 0, good.stdout[-4000:] + good.stderr[-2000:]
    assert "make evals: PASSED" in good.stdout
    rows = runs_of(tmp, "byo_weather:run")
    assert {stage(r) for r in rows} == STAGES, rows
    for r in rows:
        if stage(r) != "redteam":
            assert r[7] == ["weather-oslo", "weather-paris"], r  # the cases written here, nothing from golden/
        assert r[3] == MODEL, r  # KIT_AGENT_MODEL, recorded alike by every front end
        assert r[4] > 0 and r[4] == r[5], r  # it ran, and passed
    con = duckdb.connect(str(tmp / "evals.duckdb"), read_only=True)
    labels = con.execute("SELECT DISTINCT agent, model FROM runs").fetchall()
    con.close()
    # Nothing ran under the reference agent's labels, and the red team had no control target.
    assert not [lbl for lbl in labels if "reference" in f"{lbl}" or "control-" in f"{lbl}"], labels


def test_the_red_team_attacked_your_agent_with_the_generic_corpus(byo):
    tmp, good, _, _ = byo
    [red] = [r for r in runs_of(tmp, "byo_weather:run") if stage(r) == "redteam"]
    ids = {c.split("/")[1] for c in red[7]}
    assert ids and all(i.startswith("gen-") for i in ids), (
        ids
    )  # kit_promptfoo/redteam/generic/attacks.yaml, not the shop's
    assert "promptfoo redteam run (byo_weather:run: generic attacks)" in good.stdout


def test_after_a_green_make_evals_gate_compare_and_report_pick_its_runs(byo):
    _, _, after, _ = byo
    gate = after["gate"]
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert gate.stdout.count("gate passed for run") == 4, gate.stdout  # kit, deepeval, promptfoo, red team
    assert after["report"].returncode == 0 and "-kit-" in after["report"].stdout, after["report"].stdout[:500]
    # The first make evals on this store: its runs have no baseline yet (an earlier make evals), and compare,
    # which picks that pair when no run is named, says so (exit 2).
    compare = after["compare"]
    assert compare.returncode == 2 and "no baseline for run" in compare.stderr, compare.stderr
    assert "no earlier make evals wrote a complete run" in compare.stderr, compare.stderr


def test_a_planted_fault_fails_in_every_stage_on_the_check_that_catches_it(byo):
    tmp, _, _, bad = byo
    assert bad.returncode != 0 and "make evals: FAILED" in bad.stdout, bad.stdout[-3000:]
    rows = runs_of(tmp, "byo_weather:leaky")
    assert {stage(r) for r in rows} == STAGES, rows
    con = duckdb.connect(str(tmp / "evals.duckdb"), read_only=True)
    for r in rows:
        assert r[5] < r[4], f"{stage(r)} passed the leaky agent: {r}"
        failed = con.execute(
            "SELECT DISTINCT \"check\", reason FROM check_results WHERE run_id = ? AND outcome = 'fail'", [r[0]]
        ).fetchall()
        assert any("ops.admin@weather-corp.com" in (reason or "") for _, reason in failed), (stage(r), failed)
    con.close()
    summary = bad.stdout.split("== failures by check (worst first)")[1]
    assert "no_pii failed in 2/2 cases" in summary and "output leaks email 'ops.admin@weather-corp.com'" in summary


def test_every_front_end_judges_the_same_attempts_with_your_invariants(byo):
    """One plan: the kit, DeepEval and Promptfoo judge `runs: 2` as two attempts, expand the user's own
    invariants file (KIT_INVARIANTS), and give the same verdict on every check of every attempt."""
    tmp, _, _, _ = byo
    rows = [r for r in runs_of(tmp, "byo_weather:run") if stage(r) != "redteam"]
    con = duckdb.connect(str(tmp / "evals.duckdb"), read_only=True)
    verdicts = {}
    for r in rows:
        verdicts[r[1]] = sorted(
            con.execute(
                """SELECT case_id, attempt, regexp_replace("check", '^kit:', ''), outcome FROM check_results
                   WHERE run_id = ? AND gate = 'hard' AND "check" <> 'promptfoo:success'""",
                [r[0]],
            ).fetchall()
        )
    con.close()
    assert set(verdicts) == {"kit", "deepeval", "promptfoo"}, rows
    oslo = [v for v in verdicts["kit"] if v[0] == "weather-oslo"]
    assert {v[1] for v in oslo} == {0, 1}  # runs: 2
    assert {v[2] for v in oslo} >= {"called_at_most:get_weather", "called:get_weather"}  # the user's invariant
    assert verdicts["deepeval"] == verdicts["kit"] and verdicts["promptfoo"] == verdicts["kit"], verdicts


def test_the_agent_is_called_once_per_attempt_and_once_per_attack(byo):
    """Run once, judge everywhere: DeepEval and the Promptfoo eval judge the kit stage's runs; only the red
    team calls the agent again, once per attack."""
    tmp, good, _, _ = byo
    calls = (tmp / "calls-byo_weather-run.txt").read_text().splitlines()
    rows = runs_of(tmp, "byo_weather:run")
    attempts = next(r[4] for r in rows if r[1] == "kit")
    attacks = next(r[4] for r in rows if stage(r) == "redteam")
    assert attempts == 3 and attacks > 0
    assert len(calls) == attempts + attacks, (len(calls), attempts, attacks)
    assert "judging the kit stage's runs" in good.stdout
