"""kit report and kit compare over a real store; SQL aggregates agree with kit.aggregate."""

from __future__ import annotations

import itertools

import pytest

from kit.aggregate import flips, pass_hat_k, summarize
from kit.cli import main as kit
from kit.result import CaseRun, Result
from kit.store import open_store
from kit.store import queries as q

# case -> passes per attempt, in two suite runs (model m1 then m2)
RUN_A = {"refund": [1, 1, 1], "loop": [1, 0, 1], "pii": [0, 0, 0], "ship": [1, 1, 1]}
RUN_B = {"refund": [1, 0, 0], "loop": [1, 1, 1], "pii": [0, 0, 0], "ship": [1, 1, 1], "new": [1, 1, 0]}


def _case_run(case_id: str, attempt: int, ok: int) -> CaseRun:
    return CaseRun(
        case_id,
        attempt,
        (
            Result("called:lookup_order", bool(ok), "" if ok else "lookup_order never called"),
            Result("finished", True),
        ),
    )


def _record(store, model: str, sha: str, results: dict[str, list[int]], soft: list[str] | None = None) -> str:
    run_id = store.start_run("kit", agent="desk", model=model, config_hash="c0", git_sha=sha)
    for case_id, oks in results.items():
        for attempt, ok in enumerate(oks):
            store.record(run_id, _case_run(case_id, attempt, ok))
    for i, outcome in enumerate(soft or []):
        store.record_soft(run_id, f"case{i}", 0, "geval:tone", outcome=outcome, score=0.5, judge_model="j1")
    store.finish_run(run_id)
    return run_id


@pytest.fixture
def store(tmp_path):
    s = open_store(tmp_path / "evals.duckdb")
    a = _record(s, "m1", "aaaa1111", RUN_A)
    b = _record(s, "m2", "bbbb2222", RUN_B, soft=["pass", "pass", "fail", "skipped"])
    s.ids = (a, b)
    return s


def test_sql_aggregates_match_kit_aggregate(store):
    _, b = store.ids
    runs = [_case_run(c, i, ok) for c, oks in RUN_B.items() for i, ok in enumerate(oks)]
    expected = summarize(runs)
    with store.connect() as con:
        for k in (1, 2, 3):
            table = {r["case_id"]: r for r in q.case_table(con, b, k)}
            for case_id, s in expected["cases"].items():
                assert table[case_id]["pass_fraction"] == pytest.approx(s["pass_fraction"], abs=1e-4)
                assert table[case_id]["flaky"] == s["flaky"]
                assert table[case_id]["pass_hat_k"] == pytest.approx(s["pass_hat_k"][str(k)], abs=1e-4)
        suite = q.suite_pass_hat_k(con, b)
    assert {str(k): round(v, 4) for k, v in suite.items()} == expected["pass_hat_k"]


def test_pass_hat_k_macro_matches_the_python_definition(tmp_path):
    s = open_store(tmp_path / "x.duckdb")
    with s.connect() as con:
        q.install_macros(con)
        for n in range(1, 7):
            for c, k in itertools.product(range(n + 1), range(1, n + 1)):
                got = con.execute("SELECT pass_hat_k(?, ?, ?)", [c, n, k]).fetchone()[0]
                assert got == pytest.approx(pass_hat_k(c, n, k)), (c, n, k)
        assert con.execute("SELECT pass_hat_k(2, 3, 4)").fetchone()[0] is None


def test_resolve_run_references(store):
    a, b = store.ids
    with store.connect() as con:
        assert q.resolve_run(con, "latest") == b
        assert q.resolve_run(con, "previous") == a
        assert q.resolve_run(con, "latest~1") == a
        assert q.resolve_run(con, "aaaa") == a  # git sha prefix
        assert q.resolve_run(con, "m2") == b  # model id
        assert q.resolve_run(con, a[:-2]) == a  # run id prefix
        with pytest.raises(q.RunNotFound, match="no run matches 'nope'"):
            q.resolve_run(con, "nope")


def test_report_text_shows_cases_checks_soft_gates_and_totals(store, capsys):
    assert kit(["report", "--store", str(store.path), "--k", "2"]) == 0
    out = capsys.readouterr().out
    assert store.ids[1] in out and "model m2" in out and "status complete" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line and not line.startswith(" ")}
    assert lines["refund"].split()[1:6] == ["3", "1", "0.33", "0.00", "flaky"]
    assert lines["new"].split()[1:6] == ["3", "2", "0.67", "0.33", "flaky"]
    assert lines["loop"].split()[1:5] == ["3", "3", "1.00", "1.00"]
    assert "fail  called:lookup_order (2/3): lookup_order never called" in out
    soft = lines["geval:tone"].split()
    assert soft[1:6] == ["4", "2", "1", "1", "0"] and soft[-1] == "0.67"
    assert "totals: 5 cases, 15 runs, 9 passed (60.0%), 0 errors, 2 flaky" in out


def test_report_of_a_missing_run_is_exit_2(store, capsys):
    assert kit(["report", "--store", str(store.path), "--run", "zzz"]) == 2
    assert "no run matches 'zzz'" in capsys.readouterr().err


def test_compare_names_flips_and_their_checks(store, capsys):
    a, b = store.ids
    with store.connect() as con:
        cmp = q.compare(con, a, b)
    expected = flips({c: all(v) for c, v in RUN_A.items()}, {c: all(v) for c, v in RUN_B.items()})
    assert [f.case_id for f in cmp.pass_to_fail] == expected["pass_to_fail"] == ["refund"]
    assert [f.case_id for f in cmp.fail_to_pass] == expected["fail_to_pass"] == ["loop"]
    assert cmp.pass_to_fail[0].checks == ["called:lookup_order"]
    assert cmp.fail_to_pass[0].checks == ["called:lookup_order"]
    assert cmp.only_b == ["new"] and cmp.only_a == []
    assert kit(["compare", "aaaa", "m2", "--store", str(store.path)]) == 0
    out = capsys.readouterr().out
    assert "pass→fail: 1\n  refund  1.00 → 0.33  checks: called:lookup_order" in out
    assert "fail→pass: 1\n  loop  0.67 → 1.00" in out
    assert "only in B: new" in out


def test_the_report_compares_with_the_baseline_run(tmp_path):
    """kit report's comparison and make evals' use one rule: same source and agent, complete, no control."""
    from kit.report.data import gather

    s = open_store(tmp_path / "evals.duckdb")
    a = _record(s, "m1", "aaaa1111", RUN_A)
    ctl = s.start_run("kit", agent="desk", model="control-obey-injection", git_sha=None)
    s.finish_run(ctl)
    other = s.start_run("kit", agent="another-desk", model="m1", git_sha=None)
    s.finish_run(other)
    b = _record(s, "m2", "bbbb2222", RUN_B)
    data = gather(s, b)
    assert data.comparison is not None and data.comparison.a == a
    assert [f.case_id for f in data.comparison.pass_to_fail] == ["refund"]


def test_junit_renders_failures_errors_and_skipped_soft_gates(store):
    import xml.etree.ElementTree as ET

    from kit.report import junit

    _, b = store.ids
    with store.connect() as con:
        run = q.run_info(con, b)
        xml = junit.render([junit.SuiteRows(run, q.case_runs(con, b), q.unpassed_checks(con, b))])
    suite = next(ET.fromstring(xml).iter("testsuite"))
    # 15 case runs + the 2 soft verdicts that are not a pass (one fail, one skipped)
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("17", "6", "1")
    messages = [f.get("message") for f in suite.iter("failure")]
    assert "called:lookup_order: lookup_order never called" in messages
