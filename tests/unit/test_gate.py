"""kit gate: exit 1 naming what failed (hard failure, soft floor, incomplete run, new failures vs baseline)."""

from __future__ import annotations

import pytest

from kit.cli import main as kit
from kit.result import CaseRun, Result
from kit.store import open_store


def _record(store, results: dict[str, bool], soft: list[str] = (), finish: bool = True, model: str = "m") -> str:
    run_id = store.start_run("kit", model=model, git_sha=None, detached=not finish)
    for case_id, ok in results.items():
        store.record(run_id, CaseRun(case_id, 0, (Result("no_pii", ok, "" if ok else "email in output"),)))
    for i, outcome in enumerate(soft):
        store.record_soft(run_id, f"c{i}", 0, "geval:tone", outcome=outcome, score=0.5, judge_model="j")
    if finish:
        store.finish_run(run_id)
    else:
        store.merge()
    return run_id


@pytest.fixture
def store(tmp_path):
    return open_store(tmp_path / "evals.duckdb")


def _gate(store, tmp_path, *extra: str, policy: str | None = None) -> int:
    cfg = tmp_path / "gates.yaml"
    cfg.write_text(policy or "soft: {default_floor: 0.75, floors: {'geval:tone': 0.5}}\n")
    return kit(["gate", "--store", str(store.path), "--config", str(cfg), *extra])


def test_green_run_passes(store, tmp_path, capsys):
    _record(store, {"a": True, "b": True}, soft=["pass", "fail"])
    assert _gate(store, tmp_path) == 0
    assert "gate passed" in capsys.readouterr().out


def test_hard_failure_fails_and_is_named(store, tmp_path, capsys):
    _record(store, {"a": True, "b": False})
    assert _gate(store, tmp_path) == 1
    assert "hard fail: case b check no_pii (1x): email in output" in capsys.readouterr().err


def test_soft_gate_under_its_floor_fails(store, tmp_path, capsys):
    _record(store, {"a": True}, soft=["pass", "fail", "fail"])
    assert _gate(store, tmp_path) == 1
    assert "soft gate geval:tone: pass rate 0.33 under its floor 0.50" in capsys.readouterr().err


def test_skipped_soft_verdicts_follow_the_policy(store, tmp_path, capsys):
    _record(store, {"a": True}, soft=["pass", "skipped", "skipped"])
    assert _gate(store, tmp_path) == 0  # ignore: 1/1 given verdicts passed
    assert _gate(store, tmp_path, policy="soft: {default_floor: 0.5, skipped: fail}\n") == 1
    assert "pass rate 0.33 under its floor 0.50" in capsys.readouterr().err


def test_incomplete_run_fails(store, tmp_path, capsys):
    _record(store, {"a": True}, finish=False)
    assert _gate(store, tmp_path) == 1
    assert "is running: it did not finish" in capsys.readouterr().err


def test_new_failures_against_baseline(store, tmp_path, capsys):
    _record(store, {"a": True, "b": True, "c": False}, model="old")
    _record(store, {"a": True, "b": False, "c": False}, model="new")
    policy = "hard: {fail_on_failure: false}\n"
    assert _gate(store, tmp_path, policy=policy) == 0  # no baseline: hard failures tolerated by this policy
    assert "note: case b passed 0/1 (0.00), under its floor 1.00 (hard.fail_on_failure is off)" in (
        capsys.readouterr().out
    )
    assert _gate(store, tmp_path, "--baseline", "old", policy=policy) == 1
    err = capsys.readouterr().err
    assert "new failure vs baseline" in err and "case b 1/1 (1.00) → 0/1 (0.00), under its floor 1.00" in err
    assert "(checks: no_pii)" in err
    assert "case c" not in err  # failed before too: not new


def test_bad_config_and_missing_run_are_exit_2(store, tmp_path, capsys):
    assert _gate(store, tmp_path, policy="soft: {default_floor: 2}\n") == 2
    assert "gates.yaml: soft.default_floor" in capsys.readouterr().err
    assert _gate(store, tmp_path) == 2
    assert "no run 'latest' in the store" in capsys.readouterr().err


def test_repo_gates_yaml_is_valid():
    from pathlib import Path

    from kit.gate.policy import load_policy

    policy = load_policy(Path(__file__).resolve().parents[2] / "gates.yaml")
    assert policy.hard.fail_on_failure and 0 < policy.soft.default_floor <= 1


def test_a_soft_gate_that_drops_since_the_baseline_fails_even_above_its_floor(store, tmp_path, capsys):
    _record(store, {"a": True}, soft=["pass"] * 10)  # 1.00
    _record(store, {"a": True}, soft=["pass"] * 8 + ["fail"] * 2)  # 0.80: above the 0.5 floor, a 0.20 drop
    assert _gate(store, tmp_path, "--baseline", "previous") == 1
    assert "soft gate geval:tone: pass rate dropped from 1.00 to 0.80 since the baseline (at most 0.10 allowed)" in (
        capsys.readouterr().err
    )
    _record(store, {"a": True}, soft=["pass"] * 7 + ["fail"] * 3)  # 0.70: a 0.10 drop from 0.80 is allowed
    assert _gate(store, tmp_path, "--baseline", "previous") == 0


def test_the_deepeval_session_and_kit_gate_share_one_floor_rule(store, tmp_path, capsys):
    """The session's end-of-run floors are the gate module's: same rates, same verdict."""
    from pathlib import Path

    from deepeval_metrics.session import EvalSession
    from kit.gate.policy import load_policy
    from kit.store.lifecycle import join_run

    run_id = _record(store, {"a": True}, soft=["pass", "fail", "fail", "error", "skipped"])
    _gate(store, tmp_path)  # writes the policy file
    policy = load_policy(Path(tmp_path / "gates.yaml"))
    floors = EvalSession(join_run(store, run_id)).floors(policy)
    assert [(f.rubric, f.judged, f.floor, f.below_floor) for f in floors] == [("geval:tone", 3, 0.5, True)]
    assert _gate(store, tmp_path) == 1
    assert "soft gate geval:tone: pass rate 0.33 under its floor 0.50" in capsys.readouterr().err


def test_the_policy_file_comes_from_the_settings(store, tmp_path, monkeypatch, capsys):
    _record(store, {"a": True}, soft=["pass", "fail"])
    (tmp_path / "strict.yaml").write_text("soft: {default_floor: 0.9}\n")
    (tmp_path / "pyproject.toml").write_text('[tool.kit]\ngates = "strict.yaml"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KIT_GATES", raising=False)
    assert kit(["gate", "--store", str(store.path)]) == 1
    assert "under its floor 0.90" in capsys.readouterr().err
    monkeypatch.setenv("KIT_GATES", str(tmp_path / "absent.yaml"))  # the variable wins; no file: defaults
    assert kit(["gate", "--store", str(store.path)]) == 1  # default floor 0.8 > 0.5


def _record_counts(store, counts: dict[str, tuple[int, int]], model: str) -> str:
    run_id = store.start_run("kit", model=model, git_sha=None)
    for case_id, (passes, n) in counts.items():
        for attempt in range(n):
            ok = attempt < passes
            store.record(run_id, CaseRun(case_id, attempt, (Result("no_pii", ok, "" if ok else "email in output"),)))
    store.finish_run(run_id)
    return run_id


def test_one_meaning_of_a_failed_case(store, tmp_path, capsys):
    """A case fails when its pass fraction is under its floor. `fail`: a case that met its floor in the
    baseline and misses it now (60/60 -> 59/60 stays over a 0.5 floor: no new failure; 59/60 -> 29/60 falls
    under it: one); `significant` adds a drop chance does not explain, even above the floor."""
    _record_counts(store, {"tiny": (60, 60), "collapse": (59, 60), "drop": (60, 60)}, model="old")
    _record_counts(store, {"tiny": (59, 60), "collapse": (29, 60), "drop": (31, 60)}, model="new")
    floors = "hard: {min_pass_fraction: 0.5, fail_on_failure: false}\n"
    assert _gate(store, tmp_path, "--baseline", "old", policy=floors + "baseline: {new_failures: fail}\n") == 1
    err = capsys.readouterr().err
    assert "new failure vs baseline" in err and "case collapse 59/60 (0.98) → 29/60 (0.48), under its floor 0.50" in err
    assert "tiny" not in err and "drop" not in err  # over its floor now: not a failed case
    assert _gate(store, tmp_path, "--baseline", "old", policy=floors + "baseline: {new_failures: significant}\n") == 1
    said = capsys.readouterr()
    assert "significant drop vs baseline" in said.err and "case drop 60/60 (1.00) → 31/60 (0.52)" in said.err
    assert "new failure vs baseline" in said.err and "case collapse 59/60" in said.err
    assert (
        "case tiny" not in said.err and "noise vs baseline" in said.out and "case tiny 60/60 (1.00) → 59/60" in said.out
    )
    assert _gate(store, tmp_path, "--baseline", "old", policy=floors + "baseline: {new_failures: ignore}\n") == 0
    assert "note: new failure vs baseline" in capsys.readouterr().out  # listed, not failed


def test_a_random_agent_over_its_floors_passes_with_new_failures_fail(store, tmp_path, capsys):
    """The case a new user met: 1.00 -> 0.90 with floor 0.7 is no failed case, so no new failure."""
    _record_counts(store, {"extend-after-yes": (10, 10)}, model="old")
    _record_counts(store, {"extend-after-yes": (9, 10)}, model="new")
    policy = "hard: {min_pass_fraction: 0.7}\nbaseline: {new_failures: fail}\n"
    assert _gate(store, tmp_path, "--baseline", "old", policy=policy) == 0
    assert "new failure" not in capsys.readouterr().err
    _record_counts(store, {"extend-after-yes": (6, 10)}, model="newer")  # under its floor now: fails, named
    assert _gate(store, tmp_path, "--baseline", "old", policy=policy) == 1
    said = capsys.readouterr()
    assert "gate FAILED" in said.err and "1 problem(s)" in said.err  # failed once, by its floor
    assert "hard fail: case extend-after-yes check no_pii (4x)" in said.err and "under its floor 0.70" in said.err
    assert (
        "note: new failure vs baseline" in said.out and "case extend-after-yes 10/10 (1.00) → 6/10 (0.60)" in said.out
    )


@pytest.mark.parametrize(
    ("policy", "where"),
    [
        ("hard: {min_pass_fraction: 1.2}\n", "hard.min_pass_fraction"),
        ("baseline: {alpha: 0}\n", "baseline.alpha"),
        ("baseline: {new_failures: warn}\n", "baseline.new_failures"),
    ],
)
def test_bad_floors_and_alphas_are_exit_2(store, tmp_path, capsys, policy, where):
    _record(store, {"a": True})
    assert _gate(store, tmp_path, policy=policy) == 2
    assert f"gates.yaml: {where}" in capsys.readouterr().err


def test_an_errored_case_is_named_once_and_floors_count_errors_as_no_pass(store, tmp_path, capsys):
    run_id = store.start_run("kit", model="m", git_sha=None)
    for attempt in range(5):
        ok = attempt < 4
        store.record(run_id, CaseRun("a", attempt, (Result("no_pii", ok, "" if ok else "email"),)))
    store.record(run_id, CaseRun("b", 0, (Result("no_pii", True, ""),)))
    store.record(run_id, CaseRun("b", 1, (), error="the agent raised RuntimeError: down"))
    store.finish_run(run_id)
    floor = "hard: {min_pass_fraction: 0.8}\n"
    assert _gate(store, tmp_path, policy=floor) == 1  # a at 4/5 clears 0.8; b's error fails it
    err = capsys.readouterr().err
    problems = [ln for ln in err.splitlines() if ln.startswith("  - ")]
    assert len(problems) == 1 and problems[0].startswith("  - hard error: case b check "), problems
    assert _gate(store, tmp_path, policy="hard: {min_pass_fraction: 0.8, fail_on_error: false}\n") == 1
    assert "hard fail: case b passed 1/2 (0.50), under its floor 0.80" in capsys.readouterr().err
