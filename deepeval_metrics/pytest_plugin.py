"""The kit's DeepEval session for a test folder of your own: import it in that folder's conftest.py
(`kit init` writes `from deepeval_metrics.pytest_plugin import *`).

- DeepEval stays offline (telemetry, update check, uploads off) and its per-test cache rewrites are pinned
  off (deepeval_metrics/deepeval_io.py says why);
- one store run per `deepeval test run` (source `deepeval`; agent, model id and kind from the one plan,
  kit.plan, as `kit run` records them; xdist workers join it);
- every CaseLog a test makes (deepeval_metrics.run_agent, replay) is stored when the test ends, whatever its
  outcome, with every metric DeepEval measured on it, through `assert_run` or a bare `deepeval.assert_test` /
  `evaluate` (deepeval_metrics.evaluated sees each test case DeepEval evaluates): the oracle's (hard), the
  rubrics' (soft) and your own DeepEval metrics (soft `metric:<name>`, hard when declared with
  deepeval_metrics.hard): a test file written with the public API needs no store code; a test case that
  names no kit case is listed at the end, not stored;
- a KitInputError as the session starts (the plan document KIT_PLAN names, its case files, its agent) ends
  it in one line naming it, exit 2, never pytest's INTERNALERROR traceback;
- the soft-gate floors of the settings' gates file are checked at the end;
- the run is finished from DeepEval's end-of-run hook, or at session end under plain pytest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from deepeval_metrics.offline import quiet_offline

# Under `deepeval test run` DeepEval is imported (and has read .env) before this runs: its telemetry is
# off only when the environment (the .env `kit init` writes) said so from the start.
_TELEMETRY_WAS_ON = (os.environ.get("DEEPEVAL_TELEMETRY_OPT_OUT") or "").strip().lower() not in ("1", "true", "yes")
quiet_offline()

import deepeval  # noqa: E402
from deepeval.utils import get_is_running_deepeval  # noqa: E402

from deepeval_metrics import caselog, evaluated  # noqa: E402
from deepeval_metrics.deepeval_io import pin_deepeval_io  # noqa: E402
from deepeval_metrics.runner import adopt, plan  # noqa: E402
from deepeval_metrics.session import EvalSession  # noqa: E402
from kit.errors import KitInputError  # noqa: E402

__all__ = [
    "kit_session",
    "pytest_configure",
    "pytest_configure_node",
    "pytest_report_header",
    "pytest_runtest_call",
    "pytest_sessionfinish",
]

_SESSION: EvalSession | None = None
WORKER_PLAN = "kit_plan"  # the key of the plan document in an xdist worker's workerinput


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    try:
        _configure(config)
    except KitInputError as e:  # bad input (the plan, its document, its agent): one line naming it, exit 2
        pytest.exit(f"kit: {e}", returncode=2)


def _configure(config: pytest.Config) -> None:
    global _SESSION
    if _TELEMETRY_WAS_ON:
        from deepeval.telemetry.client import NoopBackend, set_backend

        set_backend(NoopBackend())
    distributed = _is_worker(config) or getattr(config.option, "dist", "no") not in (None, "no")
    pin_deepeval_io(distributed=distributed)
    handed = getattr(config, "workerinput", {}).get(WORKER_PLAN)
    if handed:  # an xdist worker: the controller's plan, with the run id its session started
        adopt(handed)
    judge = plan().judge
    # A session that calls the agent imports it now (one that cannot be imported stops the session here,
    # named); one that judges recorded runs never imports it.
    agent = plan().agent_name if plan().replaying else plan().agent.name
    evaluated.observe(_store_now)  # every metric of every test case DeepEval evaluates, yours included
    _SESSION = EvalSession.begin(
        plan(),
        "deepeval",
        worker=_is_worker(config),
        agent=agent,
        model=plan().model,
        kind=plan().kind,
        meta={
            "replayed": str(plan().settings.replay_runs) if plan().replaying else None,
            "judge": judge.describe() if judge else None,
            "deepeval": deepeval.__version__,
            "runner": "deepeval test run" if get_is_running_deepeval() else "pytest",
        },
    )


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist: each worker gets the controller's plan document (its run id in it), so it joins that run."""
    if _SESSION is not None and _SESSION.document:
        node.workerinput[WORKER_PLAN] = _SESSION.document


def pytest_report_header(config: pytest.Config) -> list[str]:
    if _SESSION is None:
        return []
    return [f"kit: run {_SESSION.run_id} -> {_SESSION.store.path}"]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[Any]:
    """Store the runs the test made, after it passed, failed or was skipped."""
    with caselog.collecting() as logs:
        try:
            return (yield)
        finally:
            if _SESSION is not None:
                for log in logs:
                    if not log.recorded:
                        _SESSION.record(log)
                        log.recorded = True


def _store_now(log: caselog.CaseLog) -> None:
    """A log made as DeepEval evaluated a test case outside any test (a module-level `deepeval.evaluate`)."""
    if _SESSION is not None:
        _SESSION.record(log)


@pytest.fixture(scope="session")
def kit_session() -> EvalSession:
    """The store run of this session (to record a CaseLog made outside a test: `kit_session.record(log)`)."""
    assert _SESSION is not None
    return _SESSION


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _SESSION is None or _is_worker(session.config):
        return
    try:
        floors = _SESSION.floors(plan().gate_policy) if plan().settings.gates.exists() else []
    except Exception as exc:  # the hard-gate verdict must still stand if the store cannot be read
        print(f"\nkit: could not read soft gates from {_SESSION.store.path}: {exc}")
        floors = []
    for f in floors:
        print(f"kit soft gate: {f.line()}")
    for line in evaluated.unlinked():
        print(f"kit: DeepEval test case {line}: its metrics are not in the store")
    if any(f.below_floor for f in floors) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if not get_is_running_deepeval():
        _SESSION.finish()
        print(f"kit: run {_SESSION.run_id} stored in {_SESSION.store.path}")


@deepeval.on_test_run_end
def _finish_kit_run() -> None:
    """`deepeval test run` calls this once, after its own wrap-up: the store run is complete."""
    if _SESSION is not None and _SESSION.owner:
        _SESSION.finish()
        print(f"kit: run {_SESSION.run_id} stored in {_SESSION.store.path}")
