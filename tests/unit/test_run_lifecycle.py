"""One run lifecycle (kit.store.lifecycle): whoever writes a run (the kit's runner, DeepEval's session, `kit
ingest`), it is opened with its rules and finished `incomplete` when its cases did not load. `kit ingest`
finished such a run `complete` before, unlike the runner and the session."""

from __future__ import annotations

import json

from kit.cli import main as kit
from kit.gate.rules import RunRules
from kit.result import CaseRun, Result
from kit.store import open_store
from kit.store.lifecycle import join_run, open_run
from tests.unit.test_ingest import _comp, _result


def _status(store, run_id: str) -> str:
    with store.connect() as con:
        return con.execute("SELECT status FROM runs WHERE run_id = ?", [run_id]).fetchone()[0]


def test_a_run_whose_cases_did_not_load_is_finished_incomplete_and_a_worker_never_finishes(tmp_path) -> None:
    store = open_store(tmp_path / "evals.duckdb")
    hole = RunRules(not_loaded=("cases/bad.yaml: case 'broken': unknown check no_such_check",))
    run = open_run(store, "deepeval", rules=hole, agent="a:run")
    join_run(store, run.run_id).finish()  # a worker's finish: nothing
    assert _status(store, run.run_id) == "running"
    run.record(CaseRun("a", 0, (Result("contains", True, "ok"),)))
    assert run.finish() == "incomplete" and _status(store, run.run_id) == "incomplete"
    whole = open_run(store, "kit", rules=RunRules().to_dict())
    assert whole.finish() == "complete" and whole.finish(complete=False) == "incomplete"  # said, finished once
    assert _status(store, whole.run_id) == "complete"


def test_kit_ingest_finishes_a_run_of_cases_that_did_not_load_incomplete(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for var in ("KIT_PLAN", "KIT_CASES", "KIT_STORE", "KIT_GATES"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "good.yaml").write_text("id: refund\ninput: hi\nchecks: [{type: contains, text: x}]\n")
    (tmp_path / "cases" / "bad.yaml").write_text("id: broken\ninput: hi\nchecks: [{type: no_such_check}]\n")
    (tmp_path / "pyproject.toml").write_text('[tool.kit]\ncases = "cases"\n')
    results = [_result(0, "refund", "Refund issued", [_comp("contains", "Refund", True)])]
    (tmp_path / "out.json").write_text(json.dumps({"evalId": "e", "results": {"version": 3, "results": results}}))
    assert kit(["ingest", "promptfoo", "out.json", "--store", str(tmp_path / "evals.duckdb")]) == 0
    store = open_store(tmp_path / "evals.duckdb")
    with store.connect() as con:
        (status,) = con.execute("SELECT status FROM runs WHERE source = 'promptfoo'").fetchone()
    assert status == "incomplete"
