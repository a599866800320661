"""A DeepEval metric of the user's own given to a bare `deepeval.assert_test` (not the kit's `assert_run`)
reaches the store: deepeval_metrics.evaluated sees every test case the installed DeepEval evaluates (through
its test run manager's `update_test_run`) and records each metric the kit's own did not, soft unless declared
hard; the kit's oracle and rubric verdicts are not recorded twice; a test case naming no kit case is listed."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")

import deepeval
from deepeval.test_case import LLMTestCase

import deepeval_metrics as kit
from deepeval_metrics import evaluated
from deepeval_metrics.caselog import collecting
from deepeval_metrics.testcase import kit_test_case
from tests.unit.test_deepeval_own_metric import Politeness, _stored, project  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
stored_now: list[object] = []


@pytest.fixture(autouse=True)
def observed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The observer as the plugin installs it, taken off DeepEval's manager again after each test."""
    from deepeval.test_run import global_test_run_manager

    monkeypatch.setattr(global_test_run_manager, "update_test_run", global_test_run_manager.update_test_run)
    evaluated.observe(stored_now.append)


def test_a_users_metric_in_a_bare_assert_test_reaches_the_store(project: Path) -> None:  # noqa: F811
    [case] = kit.load_cases().cases
    with collecting() as logs:
        log = kit.run_agent(case)
        deepeval.assert_test(kit.test_case(log), [*kit.oracle_metrics(case, log), Politeness()])
    assert list(log.soft) == ["metric:Politeness"]  # the oracle's verdict is recorded once, by its metric
    assert log.soft["metric:Politeness"].outcome == "pass" and log.soft["metric:Politeness"].reason == "says 'thank'"
    rows = _stored(project, logs)
    assert ("contains", "hard", "pass") in rows and ("metric:Politeness", "soft", "pass") in rows


def test_a_declared_hard_metric_in_a_bare_assert_test_decides_the_run(project: Path) -> None:  # noqa: F811
    [case] = kit.load_cases().cases
    with collecting() as logs:
        log = kit.run_agent(case)
        with pytest.raises(AssertionError, match="Curtness"):
            deepeval.assert_test(kit.test_case(log), [*kit.oracle_metrics(case, log), kit.hard(Curtness(word="sorry"))])
    assert not log.case_run().passed and [r.name for r in log.case_run().failures] == ["metric:Curtness"]
    assert ("metric:Curtness", "hard", "fail") in _stored(project, logs)


def test_assert_run_is_not_recorded_twice(project: Path) -> None:  # noqa: F811
    [case] = kit.load_cases().cases
    with collecting() as logs:
        log = kit.run_agent(case)
        kit.assert_run(log, [*kit.oracle_metrics(case, log), Politeness()])
    assert list(log.soft) == ["metric:Politeness"] and not log.own_hard
    assert [r for r in _stored(project, logs) if r[0] == "metric:Politeness"] == [("metric:Politeness", "soft", "pass")]


def test_a_test_case_built_from_a_trace_alone_gets_a_judged_log(project: Path) -> None:  # noqa: F811
    [case] = kit.load_cases().cases
    trace = {"case_id": "order", "final_output": "ORD-1 has shipped, thank you", "spans": []}
    with collecting() as logs:
        deepeval.assert_test(kit_test_case(trace, case), [Politeness()])
    [log] = logs
    assert log.case_run().passed and [r.name for r in log.case_run().results] == ["contains"]
    assert ("metric:Politeness", "soft", "pass") in _stored(project, logs)


def test_a_test_case_naming_no_kit_case_is_listed_not_stored(project: Path) -> None:  # noqa: F811
    before = len(evaluated.unlinked())
    with collecting() as logs:
        deepeval.assert_test(LLMTestCase(name="free-form", input="hi", actual_output="thank you"), [Politeness()])
    assert logs == [] and evaluated.unlinked()[before:] == [
        "free-form: names no kit case (build it with deepeval_metrics.test_case)"
    ]


class Curtness(Politeness):
    @property
    def __name__(self) -> str:
        return "Curtness"


def test_the_plugin_stores_a_bare_assert_tests_own_metric(project: Path) -> None:  # noqa: F811
    """The conftest `kit init` writes, a test file with a bare assert_test, under plain pytest in its own
    process: the user's metric is in the store beside the oracle's checks."""
    tests = project / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text("from deepeval_metrics.pytest_plugin import *  # noqa: F403\n")
    (tests / "test_mine.py").write_text(
        textwrap.dedent(
            """\
            import pytest
            from deepeval import assert_test
            import deepeval_metrics as kit
            from tests_metric import Politeness

            SUITE = kit.load_cases()

            @pytest.mark.parametrize(("case", "attempt"), kit.case_params(SUITE))
            def test_case(case, attempt):
                log = kit.run_agent(case, attempt)
                assert_test(kit.test_case(log), kit.oracle_metrics(case, log) + [Politeness()])
            """
        )
    )
    (tests / "tests_metric.py").write_text("from tests.unit.test_deepeval_own_metric import Politeness  # noqa: F401\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tests)]), "DEEPEVAL_TELEMETRY_OPT_OUT": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", str(tests)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    from kit.store import open_store

    with open_store(project / "store.duckdb").connect() as con:
        rows = con.execute('SELECT "check", gate, outcome FROM check_results ORDER BY "check"').fetchall()
    assert rows == [("contains", "hard", "pass"), ("metric:Politeness", "soft", "pass")]
