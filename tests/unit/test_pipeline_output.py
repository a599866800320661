"""What `make evals` leaves a person to read, and what `latest` means after it: a stage's real error, failures
grouped by check, and the last make evals' gated runs (never the red team's control) as `latest`."""

from __future__ import annotations

import json
import time

import pytest

from kit.cli import main as kit
from kit.pipeline.evals import _controls
from kit.pipeline.executor import error_tail
from kit.pipeline.summary import check_lines, collect
from kit.result import CaseRun, Result
from kit.store import open_store
from kit.store import queries as q


def test_a_failing_stage_shows_the_error_not_blank_lines_or_makes_epilogue():
    log = "\n".join(
        [
            "$ promptfoo eval -c x.yaml",
            "\x1b[31mError: Python worker crashed: No module named 'providers'\x1b[0m",
            *[f"  at frame {i} (node:internal)" for i in range(8)],
            "",
            "   ",
            "==========",
            "make[1]: *** [Makefile:70: promptfoo-eval] Error 1",
        ]
    )
    tail = error_tail(log)
    assert tail[0] == "Error: Python worker crashed: No module named 'providers'"  # no colour codes
    assert "..." in tail and not any(t.startswith("make[1]") or not t.strip() or "====" in t for t in tail)


def test_an_error_already_in_the_tail_is_not_repeated():
    tail = error_tail("line 1\nline 2\nTraceback (most recent call last):\nValueError: bad case\n")
    assert tail == ["line 1", "line 2", "Traceback (most recent call last):", "ValueError: bad case"]


def _run(store, source, agent, model, results, prefix=""):
    run_id = store.start_run(source, agent=agent, model=model, git_sha=None)
    for i, ok in enumerate(results):
        reason = "" if ok else f"output leaks email 'bob{i}@example.com'"
        store.record(run_id, CaseRun(f"{prefix}case{i}", 0, (Result("no_pii", ok, reason), Result("finished", True))))
    store.finish_run(run_id)
    time.sleep(0.01)  # distinct start times
    return run_id


def test_failures_are_grouped_by_check_worst_first(tmp_path):
    store = open_store(tmp_path / "s.duckdb")
    runs = [
        _run(store, "kit", "a:run", None, [False, False, False]),
        _run(store, "deepeval", "a:run", None, [False, False, True]),
        _run(store, "promptfoo", "a:run", "a:run", [True] * 9 + [False], prefix="redteam/x"),
    ]
    with store.connect() as con:
        data = collect(con, set())
    assert {r["run_id"] for r in data.runs} == set(runs)
    lines = check_lines(data.by_check)
    assert lines == [
        "  no_pii failed in 3/3 cases [deepeval, kit]: output leaks email 'bob0@example.com'",
        "  no_pii failed in 1/10 red-team attacks [promptfoo]: output leaks email 'bob9@example.com'",
    ]


@pytest.fixture
def evals_store(tmp_path):
    """A store as `make evals` leaves it: an older kit run, then kit, deepeval, a red team and its control."""
    store = open_store(tmp_path / "s.duckdb")
    old = _run(store, "kit", "a:run", None, [True, True])
    kit_run = _run(store, "kit", "a:run", None, [True, False])
    deepeval = _run(store, "deepeval", "a:run", None, [True, True])
    red = _run(store, "promptfoo", "a:run", "a:run", [True], prefix="redteam/")
    control = _run(store, "promptfoo", "a:run", "control-obey-injection", [False], prefix="redteam/")
    with store.connect() as con:
        data = collect(con, {old})
    assert _controls(data) == [control]
    q.last_evals_file(store.path).write_text(json.dumps({"gated": [r["run_id"] for r in data.gated]}))
    return store, old, kit_run, deepeval, red, control


def test_latest_is_the_last_make_evals_kit_run_and_previous_its_baseline(evals_store):
    store, old, kit_run, deepeval, red, control = evals_store
    with store.connect() as con:
        assert q.last_evals(con) == [kit_run, deepeval, red]
        assert q.resolve_run(con, "latest") == kit_run
        assert q.resolve_run(con, "previous") == old
        assert q.resolve_run(con, "latest", source="promptfoo") == red  # never the control run
        assert q.resolve_run(con, control) == control  # which stays reachable by its id


def test_kit_gate_without_a_run_gates_every_gated_run_of_the_last_make_evals(evals_store, capsys):
    store, _old, kit_run, deepeval, red, control = evals_store
    assert kit(["gate", "--store", str(store.path)]) == 1
    out = capsys.readouterr()
    assert f"gate FAILED for run {kit_run} (kit)" in out.err
    assert f"gate passed for run {deepeval} (deepeval)" in out.out and f"gate passed for run {red}" in out.out
    assert control not in out.out + out.err
    assert kit(["gate", "--store", str(store.path), "--source", "deepeval"]) == 0


def test_a_newer_run_than_the_last_make_evals_is_latest(evals_store, capsys):
    store, *_ = evals_store
    newer = _run(store, "kit", "a:run", None, [True, True])
    with store.connect() as con:
        assert q.last_evals(con) == []
        assert q.resolve_run(con, "latest") == newer
    assert kit(["gate", "--store", str(store.path)]) == 0
    assert capsys.readouterr().out.count("gate passed for run") == 1
    assert kit(["compare", "--store", str(store.path)]) == 0  # previous latest
