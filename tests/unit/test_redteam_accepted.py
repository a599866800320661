"""Accepted risks: a red-team attack listed by name in gates.yaml (`redteam.accepted`) does not fail the gate
when it succeeds; the gate lists it, by name, and a listed name that matches no attack of the run. Any other
successful attack still fails it."""

from __future__ import annotations

import pytest

from kit.cli import main as kit
from kit.result import CaseRun, Result
from kit.store import open_store


def _redteam_run(store, results: dict[str, bool]) -> str:
    run_id = store.start_run("promptfoo", model="m", git_sha=None, kind="redteam")
    for case_id, ok in results.items():
        reason = "" if ok else "issue_refund (step 1) called before any confirm"
        store.record(run_id, CaseRun(case_id, 0, (Result("guarded:issue_refund", ok, reason),)))
    store.finish_run(run_id)
    return run_id


@pytest.fixture
def store(tmp_path):
    return open_store(tmp_path / "evals.duckdb")


def _gate(store, tmp_path, policy: str) -> int:
    cfg = tmp_path / "gates.yaml"
    cfg.write_text(policy)
    return kit(["gate", "--store", str(store.path), "--config", str(cfg)])


def test_an_accepted_attack_is_listed_by_name_and_another_still_fails(store, tmp_path, capsys) -> None:
    _redteam_run(store, {"redteam/goal-x/crescendo": False, "redteam/inj-1/basic": True})
    assert _gate(store, tmp_path, "{}\n") == 1
    assert "hard fail: case redteam/goal-x/crescendo check guarded:issue_refund" in capsys.readouterr().err
    assert _gate(store, tmp_path, "redteam: {accepted: [goal-x, old-attack]}\n") == 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "accepted risk goal-x (gates.yaml redteam.accepted): attack redteam/goal-x/crescendo succeeded" in text
    assert "(checks: guarded:issue_refund)" in text
    assert "accepted risk old-attack (gates.yaml redteam.accepted) matched no attack of run" in text
    # By its case name too; an attack not listed still fails the gate.
    _redteam_run(store, {"redteam/goal-x/crescendo": False, "redteam/goal-y/crescendo": False})
    assert _gate(store, tmp_path, "redteam: {accepted: [redteam/goal-x/crescendo]}\n") == 1
    err = capsys.readouterr().err
    assert "case redteam/goal-y/crescendo" in err and "case redteam/goal-x/crescendo check" not in err


def test_a_bad_accepted_list_is_named(store, tmp_path, capsys) -> None:
    _redteam_run(store, {"redteam/a/basic": True})
    assert _gate(store, tmp_path, "redteam: {accepted: goal-x}\n") == 2
    assert "redteam.accepted" in capsys.readouterr().err


def test_the_red_team_stage_verdict_honours_the_accepted_risks(tmp_path, monkeypatch, capsys) -> None:
    import json

    from kit_promptfoo.redteam import verdict

    def res(case_id: str, ok: bool) -> dict:
        meta = {"case_id": case_id, "pluginId": "policy", "strategyId": case_id.rsplit("/", 1)[1]}
        return {"provider": {"label": "desk"}, "success": ok, "testCase": {"metadata": meta}}

    results = tmp_path / "r.json"
    results.write_text(
        json.dumps({"results": {"results": [res("redteam/goal-x/crescendo", False), res("redteam/a/basic", True)]}})
    )
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.kit]\n")
    assert verdict.main([str(results)]) == 1
    (tmp_path / "gates.yaml").write_text("redteam: {accepted: [goal-x]}\n")
    assert verdict.main([str(results)]) == 0
    assert (
        "accepted risk goal-x (gates.yaml redteam.accepted): attack redteam/goal-x/crescendo succeeded"
        in capsys.readouterr().out
    )


def test_compare_names_the_attacks_that_newly_succeed(store, tmp_path, capsys) -> None:
    import json

    a = _redteam_run(store, {"redteam/goal-x/crescendo": True, "redteam/inj-1/basic": False})
    b = _redteam_run(store, {"redteam/goal-x/crescendo": False, "redteam/inj-1/basic": False})
    assert kit(["compare", a, b, "--store", str(store.path)]) == 0
    out = capsys.readouterr().out
    assert "newly successful attacks: 1\n  redteam/goal-x/crescendo  checks: guarded:issue_refund" in out
    assert kit(["compare", a, b, "--store", str(store.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["new_attacks"] == ["redteam/goal-x/crescendo"]


def test_the_make_evals_summary_counts_attacks_as_the_report_does(store) -> None:
    """Per strategy, attacks that succeeded / attacks, an errored attack counted apart (never as one that
    succeeded), from the same function as the HTML report's tables; a run with no attack shows none."""
    from kit.pipeline.summary import collect, redteam_lines
    from kit.report.redteam_view import rates

    run_id = _redteam_run(
        store,
        {"redteam/goal-x/crescendo": False, "redteam/inj-1/basic": True, "redteam/inj-1/base64": True},
    )
    store.record(run_id, CaseRun("redteam/inj-2/basic", 0, (), error="the agent raised TimeoutError"))
    golden = store.start_run("kit", model="m", git_sha=None)
    store.record(golden, CaseRun("refund-happy-path", 0, (Result("finished", True, ""),)))
    store.finish_run(golden)
    with store.connect() as con:
        data = collect(con, set())
        runs = [r for r in data.runs if r["run_id"] == run_id]
        report = {row["name"]: row for row in rates(con, runs)[0]["strategy"]}
    lines = redteam_lines(data)
    assert lines[1] == "  base64 0/1, basic 0/2 (1 errored), crescendo 1/1"
    assert (report["basic"]["succeeded"], report["basic"]["attacks"], report["basic"]["errors"]) == (0, 2, 1)
    with store.connect() as con:
        assert redteam_lines(collect(con, {run_id})) == []  # the golden run alone: no red team
