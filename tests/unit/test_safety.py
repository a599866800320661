"""What a case cannot do: read files or reach the network from SQL, hang the suite with a regex."""

from __future__ import annotations

import time

import pytest
from _oracle import make_case, make_trace, run1

from kit.errors import KitInputError
from kit.evaluate import evaluate

STATE = make_trace(end_state={"refunds": [{"order_id": "ORD-1", "amount": 5.0}]})


@pytest.mark.parametrize(
    "query",
    [
        "SELECT * FROM read_csv('/etc/passwd')",
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('/etc/*')",
        "SELECT * FROM read_json('http://127.0.0.1:9/x.json')",
        "SELECT * FROM read_parquet('s3://bucket/x.parquet')",
    ],
)
def test_end_state_sql_cannot_read_files_or_the_network(query):
    r = run1(STATE, {"type": "end_state", "query": query, "empty": True})
    assert r.outcome == "error" and not r.passed
    assert "disabled" in r.reason or "Permission" in r.reason or "not" in r.reason


def test_end_state_sql_cannot_reopen_the_door():
    # A SET is not a SELECT: refused when the case loads.
    case = "{type: end_state, query: 'SET enable_external_access = true', empty: true}"
    import tempfile
    from pathlib import Path

    from kit.case import load_suite

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "c.yaml").write_text(f"id: c\ninput: hi\nchecks: [{case}]\n")
        (err,) = load_suite(d).errors
    assert "query must be a SELECT, got SET" in str(err)


def test_end_state_reads_only_the_trace_tables():
    ok = run1(STATE, {"type": "end_state", "query": "SELECT order_id, amount FROM refunds", "expected": [["ORD-1", 5]]})
    assert ok.passed
    # DuckDB's catalogue (its settings, secrets, extensions) is not the end state: refused when the case loads.
    with pytest.raises(KitInputError, match="query uses duckdb_settings"):
        run1(STATE, {"type": "end_state", "query": "SELECT * FROM duckdb_settings() WHERE name = 'x'", "empty": True})


def test_catastrophic_regex_is_bounded_and_is_an_error():
    trace = make_trace(output="a" * 60 + "!")
    started = time.perf_counter()
    r = run1(trace, {"type": "regex", "pattern": "(a|aa)+$"})
    elapsed = time.perf_counter() - started
    assert r.outcome == "error" and "catastrophic backtracking" in r.reason
    assert elapsed < 5


def test_a_crashing_check_is_an_error_and_the_others_still_run(monkeypatch):
    from kit.checks import REGISTRY
    from kit.checks.registry import CheckDef

    original = REGISTRY["finished"]

    def boom(trace):
        raise RuntimeError("kaboom")

    monkeypatch.setitem(REGISTRY, "finished", CheckDef("finished", boom, original.params, "finished", None))
    case = make_case({"type": "finished"}, {"type": "no_repeat"})
    run = evaluate(make_trace(), case)
    assert [r.outcome for r in run.results] == ["error", "pass"]
    assert run.results[0].reason == "check raised RuntimeError: kaboom"
    assert not run.passed and run.outcome == "error"
