"""The model's calls recorded once and replayed (kit.recording through kit.runner.invoke): real SDK clients
(openai, streamed openai, anthropic) against a sampling model double on 127.0.0.2, which is then stopped."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kit.case import Case, load_suite
from kit.doubles.sampling_model import SamplingModel
from kit.recording import Recordings, install, read, uninstall
from kit.runner import RunOptions, jobs_for, run_suite
from kit.runner.agents import load_agent
from kit.runner.invoke import Invocation, invoke

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
KEY = "sk-test-NEVER-WRITTEN-4242"
MODEL = "desk-model-2025-01-01"
CASES = """
- id: refund/damaged
  input: "My mug arrived broken, refund please."
  runs: 3
  checks:
    - {type: contains, text: "approved"}
    - {type: contains, text: "sorry", all: false}
- id: refund/late
  input: "My order is late, I want my money back."
  runs: 3
  checks:
    - {type: contains, text: "approved"}
"""
# The double errs at random: a faulty answer fails the `approved` check.
ANSWERS = ["Refund approved.", "REFUND DENIED, sorry.", "Refund approved, sorry for the wait."]

Outcomes = dict[tuple[str, int], tuple[Any, ...]]


@pytest.fixture
def desks(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.syspath_prepend(str(FIXTURES))
    monkeypatch.setenv("DESK_API_KEY", KEY)
    import recording_desks

    yield recording_desks
    uninstall()


@pytest.fixture
def cases(tmp_path: Path) -> list[Case]:
    (tmp_path / "cases.yaml").write_text(CASES)
    return list(load_suite(tmp_path / "cases.yaml").cases)


def outcomes(runs: list[Invocation]) -> Outcomes:
    return {
        (r.case_run.case_id, r.case_run.attempt): (
            r.case_run.outcome,
            r.case_run.error,
            tuple((x.name, x.passed, x.error, x.reason) for x in r.case_run.results),
        )
        for r in runs
    }


def suite(agent_spec: str, cases: list[Case], mode: str = "thread") -> list[Invocation]:
    options = RunOptions(mode=mode, concurrency=3, workers=2, timeout=20)
    return run_suite(jobs_for(cases), load_agent(agent_spec), options)


def _record(
    desk: str, cases: list[Case], folder: Path, monkeypatch: pytest.MonkeyPatch, mode: str = "thread"
) -> Outcomes:
    with SamplingModel(ANSWERS, seed=11) as model:
        monkeypatch.setenv("DESK_BASE_URL", model.base_url)
        install(Recordings("record", folder, MODEL))
        recorded = outcomes(suite(f"recording_desks:{desk}", cases, mode))
        assert all(h.get("authorization", h.get("x-api-key", "")).endswith(KEY) for _, _, h in model.requests)
    return recorded


@pytest.mark.parametrize(
    ("desk", "changed"),
    [
        ("openai_desk", "messages[0].content changed"),
        ("streaming_desk", "messages[0].content changed"),
        ("anthropic_desk", "system changed"),
    ],
)
def test_replay_gives_the_recorded_outcome_of_every_attempt_and_check(
    desk: str, changed: str, desks: Any, cases: list[Case], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "recordings"
    recorded = _record(desk, cases, folder, monkeypatch)
    verdicts = {o[0] for o in recorded.values()}
    assert verdicts == {"pass", "fail"}, recorded  # chance failures are part of what is replayed

    install(Recordings("replay", folder, MODEL))  # the model double is stopped: nothing answers there now
    for _ in range(2):
        runs = suite(f"recording_desks:{desk}", cases)
        assert outcomes(runs) == recorded
        assert all(r.case_run.metrics["cost_usd"] == 0.0 and r.trace["replayed"]["calls"] == 2 for r in runs)

    for path in folder.rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text() and "KEY" not in path.read_text().upper().replace("KEY_", "")
    monkeypatch.setattr(desks, "SYSTEM", desks.SYSTEM.replace("short", "brief"))
    missed = suite(f"recording_desks:{desk}", cases)
    assert {r.case_run.outcome for r in missed} == {"error"}
    first = next(r for r in missed if (r.case_run.case_id, r.case_run.attempt) == ("refund/late", 1))
    assert first.case_run.error is not None
    assert first.case_run.error.startswith("recording miss: case 'refund/late' attempt 1: POST /v1/")
    assert changed in first.case_run.error


def test_a_miss_is_the_runs_error_even_when_the_agent_swallows_it(
    desks: Any, cases: list[Case], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "recordings"
    case = cases[0]
    install(Recordings("replay", folder, MODEL))
    monkeypatch.setenv("DESK_BASE_URL", "http://127.0.0.2:9")  # nothing there: a live call would fail otherwise
    run = invoke(load_agent("recording_desks:swallowing_desk"), case, 0, timeout=10)
    assert run.case_run.outcome == "error"
    assert "recording miss: case 'refund/damaged' attempt 0: POST /v1/chat/completions: no recording" in str(
        run.case_run.error
    )


def test_a_recording_of_another_model_is_refused_and_record_missing_fills_the_gaps(
    desks: Any, cases: list[Case], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "recordings"
    recorded = _record("openai_desk", cases[:1], folder, monkeypatch)
    assert sorted((read(folder, "refund/damaged") or pytest.fail("no file")).attempts) == ["0", "1", "2"]

    install(Recordings("replay", folder, "desk-model-2025-06-01"))
    run = invoke(load_agent("recording_desks:openai_desk"), cases[0], 0, timeout=10)
    assert "recorded with model 'desk-model-2025-01-01', but the plan pins 'desk-model-2025-06-01'" in str(
        run.case_run.error
    )

    with SamplingModel(ANSWERS, seed=5) as model:
        monkeypatch.setenv("DESK_BASE_URL", model.base_url)
        install(Recordings("record-missing", folder, MODEL))
        more = [invoke(load_agent("recording_desks:openai_desk"), cases[0], a, timeout=10) for a in range(4)]
        assert len(model.requests) == 2  # only attempt 3 was called live
    assert outcomes(more[:3]) == {k: v for k, v in recorded.items() if k[0] == "refund/damaged"}
    assert "replayed" not in (more[3].trace or {}) and "replayed" in (more[0].trace or {})
    assert sorted((read(folder, "refund/damaged") or pytest.fail("no file")).attempts) == ["0", "1", "2", "3"]


def test_a_call_outside_any_attempt_is_refused_in_replay(desks: Any, tmp_path: Path) -> None:
    from openai import BadRequestError, OpenAI

    install(Recordings("replay", tmp_path, MODEL))
    client = OpenAI(base_url="http://127.0.0.2:9/v1", api_key=KEY, max_retries=3)
    with pytest.raises(BadRequestError, match="outside any case's attempt"):
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "hi"}])
    assert "recording_desks" in sys.modules
