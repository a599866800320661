"""`make evals`' orchestrator: stages into one store, one summary, JUnit XML, the gates' verdict."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kit import pipeline

ROOT = Path(__file__).resolve().parents[2]


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
    by_name = proc.stdout.split("== failing checks by name")[1].split("== failing checks\n")[0]
    assert "refund_within_order_total" in by_name
    assert "make evals: FAILED" in proc.stdout


def test_junit_names_the_failing_check(faulty):
    tmp, _ = faulty
    junit = ET.parse(tmp / "out" / "junit.xml").getroot()
    failures = [f.get("message") for f in junit.iter("failure")]
    assert failures and any("refund_within_order_total" in m for m in failures)
    suite = next(junit.iter("testsuite"))
    assert int(suite.get("failures")) == len(failures) and suite.get("name").startswith("kit:")


def test_a_broken_stage_is_reported_and_does_not_hide_the_others(tmp_path, monkeypatch):
    def stages(variant, shards, agent=None):
        kit = [sys.executable, "-m", "kit.cli"]
        return [
            pipeline.Stage("kit", [*kit, "run", "-q", "-k", "kb-*"], "runner"),
            pipeline.Stage("deepeval", ["/nonexistent/deepeval"], "a tool that is not installed"),
        ]

    monkeypatch.setattr(pipeline, "stages", stages)
    monkeypatch.setenv("KIT_STORE", str(tmp_path / "evals.duckdb"))
    monkeypatch.chdir(ROOT)
    assert pipeline.main(["--out", str(tmp_path / "out")]) == 1
    summary = (tmp_path / "out" / "summary.txt").read_text()
    assert "deepeval   exit 127" in summary
    assert "7/7 case runs passed" in summary  # the runner's results are still there


def test_a_control_target_is_not_gated():
    assert pipeline.is_control({"model": "control-obey-injection", "agent": "x"})
    assert not pipeline.is_control({"model": "agent-default", "agent": "red team"})


def test_the_baseline_is_the_previous_run_of_the_same_agent_never_a_control(tmp_path):
    from kit.store import open_store

    store = open_store(tmp_path / "evals.duckdb")
    for run_id, model, at in [
        ("old", "m-2024-01-01", "2026-01-01T00:00:00"),
        ("ctl", "control-obey-injection", "2026-01-02T00:00:00"),
        ("other-agent", "m-2024-01-01", "2026-01-02T00:00:00"),
        ("new", "m-2025-06-01", "2026-01-03T00:00:00"),
    ]:
        agent = "someone-else" if run_id == "other-agent" else "red team"
        store.start_run("promptfoo", agent=agent, model=model, run_id=run_id, started_at=at, git_sha=None)
        store.finish_run(run_id)
    with store.connect() as con:
        runs = {r["run_id"]: r for r in pipeline._rows(con, "SELECT * FROM runs", [])}
        assert pipeline.previous_run(con, runs["new"]) == "old"  # another model: exactly what a flip compares
        assert pipeline.previous_run(con, runs["old"]) is None


def test_a_base_branch_store_is_copied_in_once_with_its_results(tmp_path):
    from kit.result import CaseRun, Result
    from kit.store import open_store

    base = open_store(tmp_path / "base.duckdb")
    run_id = base.start_run("kit", agent="a", model="m-2024-01-01", run_id="base-1", git_sha=None)
    base.record(run_id, CaseRun("c1", 0, (Result("finished", True), Result("no_pii", False, "leak"))))
    base.finish_run(run_id)
    here = open_store(tmp_path / "evals.duckdb")
    assert pipeline.import_runs(here, base.path) == 1
    assert pipeline.import_runs(here, base.path) == 0  # nothing twice
    with here.connect() as con:
        assert con.execute("SELECT count(*) FROM case_results WHERE run_id = 'base-1'").fetchone() == (1,)
        assert con.execute("SELECT count(*) FROM check_results WHERE run_id = 'base-1'").fetchone() == (2,)
