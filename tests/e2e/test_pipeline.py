"""`make evals`' orchestrator: stages into one store, one summary, JUnit XML, the gates' verdict."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import duckdb
import pytest
from shared_runs import environ, shared_run

from kit.pipeline import Stage, Step, evaluate, kit_stage
from kit.plan import make_plan
from kit.settings import load_settings
from kit.store import open_store
from kit.store import queries as q
from kit.store.merge import import_runs

ROOT = Path(__file__).resolve().parents[2]
USER_AGENT = "examples.my_agent:run"


def run_pipeline(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "KIT_STORE": str(tmp_path / "evals.duckdb"), "HOME": str(tmp_path)}
    return subprocess.run(
        [sys.executable, "-m", "kit.pipeline", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("faulty")
    return tmp, run_pipeline(tmp, "--only", "lint", "kit", "--variant", "over_refund", "--out", str(tmp / "out"))


def test_a_fault_variant_fails_and_the_summary_names_its_check(faulty):
    _, proc = faulty
    assert proc.returncode == 1, proc.stdout + proc.stderr
    by_check = proc.stdout.split("== failures by check (worst first)")[1].split("== failing checks")[0]
    # One line per check: how many cases of how many, in which stage, and the reason in words.
    assert re.search(r"refund_within_order_total failed in \d+/\d+ cases \[kit\]: ", by_check), by_check
    assert "every failure, per case and attempt:" in by_check
    assert "make evals: FAILED" in proc.stdout


def test_junit_names_the_failing_check(faulty):
    tmp, _ = faulty
    junit = ET.parse(tmp / "out" / "junit.xml").getroot()
    failures = [f.get("message") for f in junit.iter("failure")]
    assert failures and any("refund_within_order_total" in m for m in failures)
    suite = next(junit.iter("testsuite"))
    assert int(suite.get("failures")) == len(failures) and suite.get("name").startswith("kit:")


@shared_run("pipeline")
def user_agent_evals(tmp):
    """`make evals`' kit stage with a user's agent and no cases named (the golden set), as `make evals
    AGENT=...` runs it: the pipeline, then read the store. Every stage with a user's agent: test_byo.py."""
    env = {k: v for k, v in environ().items() if not k.startswith("KIT_")}
    env.update(KIT_STORE=str(tmp / "evals.duckdb"), HOME=str(tmp), KIT_MAKE_AGENT=USER_AGENT, KIT_MAKE_ONLY="kit")
    proc = subprocess.run(
        [sys.executable, "-m", "kit.pipeline", "--from-make", "--out", str(tmp / "out")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return tmp, proc


def test_make_evals_runs_the_users_agent_in_the_kit_stage(user_agent_evals):
    tmp, proc = user_agent_evals
    assert (tmp / "evals.duckdb").is_file(), proc.stdout[-2000:] + proc.stderr[-2000:]
    con = duckdb.connect(str(tmp / "evals.duckdb"), read_only=True)
    kit_runs = con.execute("SELECT run_id, agent FROM runs WHERE source = 'kit'").fetchall()
    assert [agent for _, agent in kit_runs] == [USER_AGENT], proc.stdout[-3000:]
    run_id = kit_runs[0][0]
    traces = [
        json.loads(t)
        for (t,) in con.execute("SELECT trace FROM case_results WHERE run_id = ?", [run_id]).fetchall()
        if t
    ]
    assert len(traces) >= 40  # the golden cases, one trace each (a case the agent cannot take stores none)
    # examples/my_agent.py answers every input with one lookup and "<order> has shipped with UPS."; the
    # reference agent never does.
    for t in traces:
        assert t["source_format"] == "openai"
        assert re.fullmatch(r"(ORD-\d{6}|unknown) has shipped with UPS\.", t["final_output"]), t["final_output"]
        assert [s["name"] for s in t["spans"] if s["kind"] == "tool"] == ["lookup_order"]
    summary = (tmp / "out" / "summary.txt").read_text()
    assert f"the kit's runner on {USER_AGENT}" in summary


def test_the_stages_run_the_tools_never_make_or_the_kit_cli(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    plan = make_plan(load_settings({"agent": USER_AGENT}, root=tmp_path, env={}))
    from kit.pipeline import stages

    chosen = stages(plan, out=tmp_path / "out")
    assert [s.name for s in chosen] == [
        "lint",
        "kit",
        "deepeval",
        "promptfoo",
        "redteam",
    ]
    for stage in chosen:
        for step in stage.steps:
            assert "make" not in step.argv and "kit.cli" not in step.argv, step
            assert (step.call is None) != (not step.argv), step  # a function or a command, never both
    kit = next(s for s in chosen if s.name == "kit")
    # The runner is called with the plan, not with argv.
    assert kit.steps[0].call is not None and not kit.steps[0].argv and USER_AGENT in kit.steps[0].label


def test_a_broken_stage_is_reported_and_does_not_hide_the_others(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    monkeypatch.syspath_prepend(str(ROOT))
    settings = load_settings(
        {"agent": USER_AGENT, "cases": ROOT / "examples" / "cases.yaml", "store": tmp_path / "evals.duckdb"}, env={}
    )
    plan = make_plan(settings)
    broken = Stage(
        "deepeval",
        "a tool that is not installed",
        (Step("deepeval", ("/nonexistent/deepeval",)),),
        (("deepeval", "golden"),),
    )
    runs = tmp_path / "out" / "runs.jsonl"
    assert evaluate(plan, [kit_stage(plan, runs), broken], tmp_path / "out") == 1
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert re.search(r"(?m)^  deepeval +broken: exit 127 ", summary), summary
    assert "3/3 case runs passed" in summary  # the runner's results are still there
    assert len(runs.read_text().splitlines()) == 3  # and saved for the other front ends to judge
    with open_store(tmp_path / "evals.duckdb").connect() as con:
        assert con.execute("SELECT agent FROM runs WHERE source = 'kit'").fetchall() == [(USER_AGENT,)]


def test_a_control_target_is_not_gated():
    assert q.is_control({"model": "control-obey-injection", "agent": "x"})
    assert not q.is_control({"model": "agent-default", "agent": "red team"})


def test_the_baseline_is_the_previous_complete_run_of_the_same_agent_never_a_control(tmp_path):
    store = open_store(tmp_path / "evals.duckdb")
    for run_id, model, at in [
        ("old", "m-2024-01-01", "2026-01-01T00:00:00"),
        ("ctl", "control-obey-injection", "2026-01-02T00:00:00"),
        ("other-agent", "m-2024-01-01", "2026-01-02T00:00:00"),
        ("killed", "m-2024-01-01", "2026-01-02T12:00:00"),
        ("new", "m-2025-06-01", "2026-01-03T00:00:00"),
    ]:
        agent = "someone-else" if run_id == "other-agent" else "red team"
        store.start_run("promptfoo", agent=agent, model=model, run_id=run_id, started_at=at, git_sha=None)
        if run_id != "killed":
            store.finish_run(run_id)
    with store.connect() as con:
        assert q.baseline_run(con, "new") == "old"  # another model: exactly what a flip compares
        assert q.baseline_run(con, "old") is None


def test_a_base_branch_store_is_copied_in_once_with_its_results(tmp_path):
    from kit.result import CaseRun, Result

    base = open_store(tmp_path / "base.duckdb")
    run_id = base.start_run("kit", agent="a", model="m-2024-01-01", run_id="base-1", git_sha=None)
    base.record(run_id, CaseRun("c1", 0, (Result("finished", True), Result("no_pii", False, "leak"))))
    base.finish_run(run_id)
    here = open_store(tmp_path / "evals.duckdb")
    assert import_runs(here, base.path) == 1
    assert import_runs(here, base.path) == 0  # nothing twice
    with here.connect() as con:
        assert con.execute("SELECT count(*) FROM case_results WHERE run_id = 'base-1'").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM check_results WHERE run_id = 'base-1'").fetchone() == (2,)
