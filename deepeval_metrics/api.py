"""The public API for a DeepEval test file of your own: load the suite, run (or replay) the agent, make the
test case, get the oracle's metrics and the rubrics' metrics, assert. `kit init` writes a test file that uses
it and a conftest.py (deepeval_metrics.pytest_plugin) that stores every result in the kit's store.

    import pytest
    import deepeval_metrics as kit

    SUITE = kit.load_cases()

    @pytest.mark.parametrize(("case", "attempt"), kit.case_params(SUITE))
    def test_case(case, attempt):
        log = kit.run_agent(case, attempt)
        kit.assert_run(log, kit.oracle_metrics(case, log) + kit.case_rubric_metrics(case, log))

Everything defaults to the one plan every front end runs from (kit.plan, from `[tool.kit]` in pyproject.toml
and the KIT_* variables): the agent, the cases with their invariants, the rubrics, the judge and the agent's
timeout, as `kit run` reads them; under `make evals`, run_agent judges the kit stage's recorded run of the case
instead of calling the agent again, as the kit's own DeepEval stage does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deepeval_metrics.caselog import CaseLog
from deepeval_metrics.runner import cost, plan, plan_for, run_case
from kit.case import Case, Suite
from kit.errors import KitInputError
from kit.judge.rubrics import RubricSet, load_rubrics
from kit.runner.agents import Agent
from kit.trace import Trace, parse_trace


def load_cases(path: str | Path | None = None) -> Suite:
    """The cases to run.

    path: a case file (YAML) or a folder of them; None: the settings' `cases` (the plan's suite).

    Returns the Suite, named invariants expanded: `.cases`, the cases that loaded, and `.errors`, one
    KitInputError per case or file that did not (each names the file, the case and the check). A broken case
    never hides the good ones.
    """
    if path is None:
        return plan().suite
    return plan().derive(cases=path).suite


def case_params(suite: Suite) -> list[Any]:
    """One `pytest.param(case, attempt)` per case and attempt (a case's `runs:` asks for several), with the id
    `<case id>#<attempt>`, for `@pytest.mark.parametrize(("case", "attempt"), case_params(suite))`.

    suite: what load_cases returned.
    """
    import pytest

    return [pytest.param(c, a, id=f"{c.id}#{a}") for c in suite.cases for a in range(c.runs)]


def which_agent(spec: str | None = None) -> Agent:
    """The agent to run.

    spec: `module:callable` (the module is found from the project root, no PYTHONPATH needed); None: the
    plan's agent (the settings' `agent`, else the kit's reference agent).
    """
    return plan_for(spec).agent


def run_agent(
    case: Case, attempt: int = 0, *, agent: Agent | str | None = None, timeout: float | None = None
) -> CaseLog:
    """Run the agent once on the case, as `kit run` does (a fresh call, the oracle's checks computed).

    case: a Case from load_cases.
    attempt: which attempt this is (0-based), recorded with the result.
    agent: an Agent, a `module:callable`, or None for the plan's agent (see which_agent; then, under
        `make evals`, the kit stage's recorded run of this case and attempt is judged instead).
    timeout: seconds before the run is an error; None: the settings' `agent_timeout`.

    Returns the CaseLog the metrics fill in: `.trace` is the parsed Trace; when the agent raised, hung or
    returned something that is not a trace, `.trace` is None and `.error` says why; a case that could not run
    (a simulated user without a user model) has `.skipped` set. assert_run turns these into a failed or a
    skipped test; the conftest stores the log whatever happens.
    """
    if agent is None and timeout is None:
        run = run_case(case, attempt)  # the plan's run: the one every front end makes
        spent, label = cost(run), plan().agent_name
    else:
        own = plan_for(agent, timeout)  # the agent resolved as the plan resolves it, labelled as it is stored
        run = own.run_live(case, attempt)
        spent = {"agent_calls": 1 + run.retries, "retries": run.retries, "agent_s": run.agent_s, "kit_s": run.kit_s}
        label = own.agent_name
    log = CaseLog(case, attempt, cost=spent, agent=label)  # the store counts this stage's agent calls from it
    if run.case_run.skipped is not None:
        log.skipped = run.case_run.skipped
    elif run.trace is None:
        log.error = run.case_run.error or "the agent gave no trace"
    else:
        log.trace = parse_trace(run.trace)
        log.judged = run.case_run  # the oracle's verdict on this trace: the metrics present it, not judge again
    return log


def replay(trace: Trace | dict[str, Any] | str | Path, case: Case, attempt: int | None = None) -> CaseLog:
    """A recorded run instead of a fresh one: judge a trace the agent produced earlier.

    trace: a Trace, a trace dict (docs/CONTRACT.md), or the path of a JSON file holding one.
    case: the case it is a run of; the trace's `case_id` must match it (else KitInputError).
    attempt: the attempt to record it as; None: the trace's own `attempt`.

    Returns a CaseLog as run_agent does.
    """
    if isinstance(trace, str | Path):
        path = Path(trace)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise KitInputError(f"cannot read a trace: {e}", file=str(path)) from None
        parsed = parse_trace(data, file=str(path))
    else:
        parsed = trace if isinstance(trace, Trace) else parse_trace(trace)
    if parsed.case_id != case.id:
        raise KitInputError(f"the trace is a run of case {parsed.case_id!r}, not of {case.id!r}")
    if attempt is not None and attempt != parsed.attempt:
        parsed = parse_trace({**parsed.model_dump(mode="json"), "attempt": attempt})
    log = CaseLog(case, parsed.attempt, cost={"agent_calls": 0})  # judged, the agent not called
    log.trace = parsed
    return log


def test_case(log: CaseLog) -> Any:
    """The DeepEval test case of a run (an LLMTestCase, or a ConversationalTestCase for a multi-turn case),
    carrying the kit trace the oracle metrics read.

    log: what run_agent or replay returned, with a trace (assert_run checks that first).
    """
    from deepeval_metrics.testcase import kit_test_case

    if log.trace is None:
        raise ValueError(f"case {log.case.id!r} attempt {log.attempt}: no trace ({log.error or log.skipped})")
    return kit_test_case(log.trace, log.case)


test_case.__test__ = False  # type: ignore[attr-defined]  # pytest: a helper, not a test


def case_rubric_metrics(
    case: Case, log: CaseLog | None = None, *, rubrics: RubricSet | str | Path | None = None, judge: Any = None
) -> list[Any]:
    """The G-Eval rubrics that apply to the case, as soft-gate metrics (conversational ones for a multi-turn
    case). Without a judge each is recorded as `skipped`, never as a pass.

    case: the Case.
    log: the run's CaseLog (its trace decides rubrics that apply by what the run did); the verdicts are
        recorded on it for the store.
    rubrics: a RubricSet or the path of a rubrics file; None: the plan's (the settings' `rubrics`; none if
        that file does not exist).
    judge: a kit.judge.JudgeConfig; None: the plan's judge (`[tool.kit.judge]`, KIT_JUDGE_*), if any.
    """
    from deepeval_metrics.conversation_rubric import conversation_rubric_metrics
    from deepeval_metrics.rubric_metric import rubric_metrics

    if not isinstance(rubrics, RubricSet):
        path = Path(rubrics) if rubrics is not None else plan().rubrics
        if rubrics is None and not path.exists():
            return []
        rubrics = load_rubrics(path)
    judge = judge if judge is not None else plan().judge
    make = conversation_rubric_metrics if getattr(case, "is_multi_turn", False) else rubric_metrics
    return list(make(rubrics, case, judge, log))


def assert_run(log: CaseLog, metrics: list[Any]) -> None:
    """Judge a run with DeepEval (`deepeval.assert_test`): a run with no trace fails with its error, a
    skipped run is a skipped test, never a pass.

    log: what run_agent or replay returned.
    metrics: oracle_metrics(case, log) and any others (case_rubric_metrics, your own DeepEval metrics: each is
        stored as a soft gate `metric:<its name>`, or a hard one when declared with deepeval_metrics.hard).
    """
    import pytest
    from deepeval import assert_test

    if log.skipped is not None:
        pytest.skip(f"case {log.case.id}: {log.skipped}")
    if log.trace is None:
        pytest.fail(f"case {log.case.id} attempt {log.attempt}: no trace: {log.error}", pytrace=False)
    from deepeval_metrics.own_metric import stored

    assert_test(test_case(log), stored(metrics, log))  # a metric of your own reaches the store too
