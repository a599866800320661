"""Without a run named, `kit compare` and the gate's baseline read the latest gated `make evals`, never an
ad-hoc run written beside it (`npx promptfoo eval`, a `kit run --replay` typed by hand), and say which
runs they chose."""

from __future__ import annotations

import json

import pytest

from kit.cli import main as kit
from kit.gate.policy import GatePolicy
from kit.result import CaseRun, Result
from kit.store import open_store
from kit.store import queries as q


def _run(store, source: str, minute: int, results: dict[str, bool], evals_id: str | None = None) -> str:
    run_id = store.start_run(
        source, agent="a:run", model="m", git_sha=None, evals_id=evals_id, started_at=f"2026-01-01T10:{minute:02}:00"
    )
    store.record_many(
        run_id,
        [(CaseRun(c, 0, (Result("no_pii", ok, "" if ok else "email in output"),)), None) for c, ok in results.items()],
    )
    store.finish_run(run_id)
    return run_id


@pytest.fixture
def runs(tmp_path_factory):
    """Two `make evals` (kit and Promptfoo runs each), an ad-hoc kit replay between them and ad-hoc
    Promptfoo evals after the second. Read only by the tests: built once."""
    tmp_path = tmp_path_factory.mktemp("gated")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(tmp_path)
        for name in ("KIT_GATES", "KIT_CASES", "KIT_STORE", "KIT_EVALS_ID"):
            mp.delenv(name, raising=False)
        yield _build(tmp_path)


def _build(tmp_path):
    store = open_store(tmp_path / "evals.duckdb")
    ok = {"a": True, "b": True}
    first = _run(store, "kit", 1, ok, "evals-1")
    adhoc_kit = _run(store, "kit", 3, {"a": False, "b": False})
    second = _run(store, "kit", 4, {"a": True, "b": False}, "evals-2")
    _run(store, "promptfoo", 6, {"a": False, "b": True}, "evals-2")
    _run(store, "promptfoo", 7, ok)
    return store, first, second, adhoc_kit


def test_a_gated_run_is_held_against_an_earlier_make_evals_and_kit_compare_says_which_runs_it_chose(runs, capsys):
    store, first, second, adhoc = runs
    with store.connect() as con:
        assert q.baseline_run(con, second) == first
        assert q.latest_gated(con) == second
        assert q.baseline_run(con, adhoc) == first  # an ad-hoc run may be held against anything before it
    from kit.commands.gate import gate_run

    result = gate_run(store, second, GatePolicy(), baseline=first)
    assert any(f"compared against baseline run {first}" in n for n in result.context)
    result = gate_run(store, second, GatePolicy(), baseline="previous", source="kit")
    assert any(f"baseline run {first}" in n and "an earlier make evals" in n for n in result.notes)
    # kit compare with no runs named: the latest make evals against its baseline, and it says so.
    assert kit(["compare", "--store", str(store.path)]) == 0
    out = capsys.readouterr().out
    chosen = f"compared: B = run {second} (kit), of the latest gated make evals (evals-2); A = run {first}"
    assert out.startswith("Gate ") and chosen in out  # the gate's verdict first, then which runs and why
    assert f"A: {first} (kit" in out and f"B: {second} (kit" in out
    assert kit(["compare", "--store", str(store.path), "--json"]) == 0
    said = json.loads(capsys.readouterr().out)
    assert (said["a"], said["b"]) == (first, second) and said["chosen"].startswith("compared: B = run")
    assert said["gate"]["passed"] is False and said["gate"]["problems"] == [
        "hard fail: case b check no_pii (1x): email in output (case passed 0/1 (0.00), under its floor 1.00)"
    ]
