"""A run's kind is part of its identity: a golden eval is compared with golden evals, a red team with red
teams, a control with nothing; and a run belongs to the `make evals` that wrote it, never a later one."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.report.page_data import batch
from kit.result import CaseRun, Result
from kit.store import open_store
from kit.store import queries as q


def _run(store, source: str, kind: str | None, case: str, passed: bool, evals: str | None = None, **kw) -> str:
    run_id = store.start_run(source, kind=kind, evals_id=evals, git_sha=None, **kw)
    store.record(run_id, CaseRun(case, 0, (Result("called:x", passed, "ok" if passed else "never called"),)), None)
    store.finish_run(run_id)
    return run_id


@pytest.fixture
def store(tmp_path: Path):
    return open_store(tmp_path / "evals.duckdb")


def test_a_golden_eval_is_never_the_baseline_of_a_red_team_nor_the_other_way(store) -> None:
    old_eval = _run(store, "promptfoo", "golden", "refund", True, agent="desk")
    old_red = _run(store, "promptfoo", "redteam", "redteam/a1", True, agent="desk")
    _run(store, "promptfoo", "control", "redteam/a1", False, agent="desk")
    new_eval = _run(store, "promptfoo", "golden", "refund", False, agent="desk")
    new_red = _run(store, "promptfoo", "redteam", "redteam/a1", True, agent="desk")
    with store.connect() as con:
        assert q.baseline_run(con, new_eval) == old_eval
        assert q.baseline_run(con, new_red) == old_red
        assert q.resolve_run(con, "latest", "promptfoo", kind="golden") == new_eval
        assert q.resolve_run(con, "previous", "promptfoo", kind="golden") == old_eval
        assert q.resolve_run(con, "previous", "promptfoo") == old_red  # latest is the red team: its own kind
        flips = q.compare(con, old_eval, new_eval)
    assert [f.case_id for f in flips.pass_to_fail] == ["refund"] and not flips.only_a and not flips.only_b


def test_a_control_is_never_latest_nor_a_baseline_whatever_its_label(store) -> None:
    base = _run(store, "promptfoo", "redteam", "redteam/a1", True, agent="desk")
    _run(store, "promptfoo", "control", "redteam/a1", False, agent="desk", model="deterministic-policy")
    red = _run(store, "promptfoo", "redteam", "redteam/a1", True, agent="desk")
    with store.connect() as con:
        assert q.baseline_run(con, red) == base
        assert q.run_info(con, q.resolve_run(con, "latest"))["kind"] == "redteam"


def test_a_run_started_without_a_kind_is_a_control_when_labelled_so(store) -> None:
    ctl = _run(store, "kit", None, "refund", False, agent="desk", model="control-obey-injection")
    plain = _run(store, "kit", None, "refund", True, agent="desk", model="m1")
    with store.connect() as con:
        assert q.run_info(con, ctl)["kind"] == "control" and q.run_info(con, plain)["kind"] == "golden"


def test_a_report_of_an_old_run_shows_its_own_make_evals_and_no_later_one(store) -> None:
    first = [
        _run(store, "kit", "golden", "refund", True, "evals-1", agent="desk"),
        _run(store, "deepeval", "golden", "refund", True, "evals-1", agent="desk"),
        _run(store, "promptfoo", "redteam", "redteam/a1", True, "evals-1", agent="desk"),
    ]
    second = [
        _run(store, "kit", "golden", "refund", False, "evals-2", agent="desk"),
        _run(store, "deepeval", "golden", "refund", False, "evals-2", agent="desk"),
        _run(store, "promptfoo", "redteam", "redteam/a1", False, "evals-2", agent="desk"),
    ]
    with store.connect() as con:
        assert set(batch(con, first[0])) == set(first)
        assert set(batch(con, second[0])) == set(second)
