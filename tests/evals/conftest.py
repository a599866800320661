"""Session plumbing for `deepeval test run tests/evals` (and plain `pytest tests/evals`).

Offline before DeepEval loads; one store run per session (xdist workers join it); DeepEval's per-test
cache rewrites pinned off (deepeval_metrics/deepeval_io.py says why); soft-gate floors from gates.yaml
checked at the end; the run finished from DeepEval's end-of-run hook, or at session end under plain pytest.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from deepeval_metrics.offline import quiet_offline

# Under `deepeval test run` the CLI has imported DeepEval (read .env, built its telemetry client) before
# this file runs: only the environment it started with can stop that. `make deepeval-evals` sets it.
_TELEMETRY_WAS_ON = (os.environ.get("DEEPEVAL_TELEMETRY_OPT_OUT") or "").strip().lower() not in ("1", "true", "yes")
quiet_offline()

import deepeval  # noqa: E402
from deepeval.utils import get_is_running_deepeval  # noqa: E402

from deepeval_metrics.deepeval_io import pin_deepeval_io  # noqa: E402
from deepeval_metrics.runner import plan  # noqa: E402
from deepeval_metrics.session import EvalSession  # noqa: E402
from kit.judge import judge_config  # noqa: E402
from kit.report.gate import load_policy  # noqa: E402

_SESSION: EvalSession | None = None
_IO: list[str] = []


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def _distributed(config: pytest.Config) -> bool:
    return _is_worker(config) or getattr(config.option, "dist", "no") not in (None, "no")


def gates_file() -> Path:
    return plan().settings.gates


def _silence_started_telemetry() -> None:
    from deepeval.telemetry.client import NoopBackend, set_backend

    set_backend(NoopBackend())  # nothing captured from here on; an event queued before may still try


def pytest_configure(config: pytest.Config) -> None:
    global _SESSION, _IO
    if _TELEMETRY_WAS_ON:
        _silence_started_telemetry()
    _IO = pin_deepeval_io(distributed=_distributed(config))
    judge = judge_config()
    _SESSION = EvalSession.begin(
        "deepeval",
        worker=_is_worker(config),
        agent=plan().agent.name,
        model=plan().model,
        kind=plan().kind,
        meta={
            "variant": plan().variant,
            "replayed": str(plan().settings.replay_runs) if plan().replaying else None,
            "judge": judge.describe() if judge else None,
            "deepeval": deepeval.__version__,
            "runner": "deepeval test run" if get_is_running_deepeval() else "pytest",
        },
    )


def pytest_report_header(config: pytest.Config) -> list[str]:
    assert _SESSION is not None
    judge = judge_config()
    return [
        f"kit: run {_SESSION.run_id} -> {_SESSION.store.path}",
        f"kit: agent {plan().agent.name}, variant {plan().variant or 'none'}"
        f"{', judging the runs recorded in ' + str(plan().settings.replay_runs) if plan().replaying else ''}; "
        f"{judge.describe() if judge else 'no judge: rubrics are skipped'}",
        f"kit: deepeval per-test IO: {', '.join(_IO) or 'stock (KIT_DEEPEVAL_CACHE=1)'}",
        *(
            ["kit: WARNING DeepEval started with telemetry on; set DEEPEVAL_TELEMETRY_OPT_OUT=1 before it"]
            if _TELEMETRY_WAS_ON
            else []
        ),
    ]


@pytest.fixture(scope="session")
def kit_session() -> EvalSession:
    assert _SESSION is not None
    return _SESSION


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _SESSION is None or _is_worker(session.config):
        return
    try:
        floors = _SESSION.floors(load_policy(gates_file()))
    except Exception as exc:  # the hard-gate verdict must still stand if the store cannot be read
        print(f"\nkit: could not read soft gates from {_SESSION.store.path}: {exc}")
        floors = []
    if floors:
        print("\nkit soft gates:")
        for f in floors:
            print(f"  {f.line()}")
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
