"""The per-trace path of `kit check` made cheaper must judge as before: the time limit still stops a check
that runs too long (decided once per trace, `limits.timer()`), results stay immutable values, and a trace
file's name in errors is still what `Path` shows."""

from __future__ import annotations

import itertools
import pickle
import threading
from pathlib import Path

import pytest
from _oracle import make_case, make_trace

from kit.checks import REGISTRY, limits
from kit.checks.registry import CheckDef
from kit.evaluate import evaluate, run_check
from kit.result import Result, Verdict
from kit.trace import _shown


@pytest.fixture
def short_limit():
    previous = limits.set_check_timeout(0.3)
    yield
    limits.set_check_timeout(previous)


def test_a_check_stuck_in_a_loop_is_stopped_and_the_checks_after_it_run(monkeypatch, short_limit):
    def spins(trace):
        n = 0
        while True:
            n += 1

    original = REGISTRY["finished"]
    monkeypatch.setitem(REGISTRY, "finished", CheckDef("finished", limits.bounded(spins), spins, "finished", None))
    case = make_case({"type": "finished"}, {"type": "no_repeat"}, {"type": "finished"})
    run = evaluate(make_trace(), case)
    assert [r.outcome for r in run.results] == ["error", "pass", "error"]
    assert run.results[0].reason == "check raised CheckTimeout: the check ran longer than 0.3 s and was stopped"
    assert "spins" in (run.results[0].traceback or "")
    assert limits._WATCH.check_since == 0.0  # no check is left running between traces
    monkeypatch.setitem(REGISTRY, "finished", original)
    assert evaluate(make_trace(), case).passed


def test_checks_judge_alike_on_the_main_thread_another_thread_and_inside_a_running_check():
    case = make_case({"type": "finished"}, {"type": "no_repeat"}, {"type": "contains", "text": "ok"})
    trace = make_trace(output="ok")
    main = evaluate(trace, case)
    got: list[object] = []
    worker = threading.Thread(target=lambda: got.append(evaluate(trace, case)))
    worker.start()
    worker.join()
    assert limits.timer() is not None
    limits._WATCH.check_since = 1.0  # as inside a running check: its own limit holds, none is set here
    try:
        assert limits.timer() is None
        nested = evaluate(trace, case)
    finally:
        limits._WATCH.check_since = 0.0
    assert got == [main] and nested == main and main.passed
    assert [run_check(spec, trace) for spec in case.checks] == list(main.results)


def test_verdicts_and_results_are_immutable_values():
    r = Result("called:x", False, "x never called")
    assert r == Result(name="called:x", passed=False, reason="x never called", error=False, score=None)
    assert (
        repr(r)
        == "Result(name='called:x', passed=False, reason='x never called', error=False, score=None, traceback=None)"
    )
    assert (r.outcome, r.to_dict()) == ("fail", {"check": "called:x", "outcome": "fail", "reason": "x never called"})
    assert Result("e", False, "boom", error=True).outcome == "error" and Result("p", True).outcome == "pass"
    assert pickle.loads(pickle.dumps(r)) == r and pickle.loads(pickle.dumps(Verdict(True, "ok", 0.5))) == Verdict(
        True, "ok", 0.5
    )
    assert Verdict(True) == Verdict(True, "", None) != Verdict(False)
    for value, name in ((r, "passed"), (Verdict(True), "reason")):
        with pytest.raises(AttributeError):
            setattr(value, name, True)


def test_a_trace_file_is_named_in_errors_as_path_shows_it():
    parts = ["", "a", ".", "..", "/", "//", "b.json", " ", "./", "/."]
    for k in range(1, 5):
        for combo in itertools.product(parts, repeat=k):
            name = "".join(combo)
            if name:
                assert _shown(name) == str(Path(name)), name
    assert _shown(Path("x/./y.json")) == "x/y.json"


def test_a_check_type_the_registry_lacks_is_an_error_not_a_crash():
    import dataclasses

    case = make_case({"type": "finished"})
    unknown = dataclasses.replace(case, checks=(dataclasses.replace(case.checks[0], type="gone"),))
    (result,) = evaluate(make_trace(), unknown).results
    assert (result.outcome, result.reason) == ("error", "check raised KeyError: 'gone'")
