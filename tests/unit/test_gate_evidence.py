"""The gate on evidence, end to end: a stand-in agent with fixed per-case pass counts, run by the real
runner (`kit run`) into the real DuckDB store, gated by `kit gate` under floors and significance."""

from __future__ import annotations

import re
import shutil

import pytest

from kit.cli import main as kit
from kit.store import open_store
from tests.unit._fixed_agent import EXAMPLE, forget_agent, run_cases, write_agent

FLOORS = {"steady": 0.6}  # steady's own floor: a fall to 30/40 clears it, yet is a significant drop
BEFORE = {"steady": (40, 40), "wobbly": (39, 40), "jittery": (38, 40)}  # flaky_agent:v1
NOISY = {"steady": (40, 40), "wobbly": (37, 40), "jittery": (36, 40)}  # v2
AFTER = {"steady": (30, 40), "wobbly": (20, 40), "jittery": (37, 40)}  # v3


@pytest.fixture
def project(tmp_path, monkeypatch):
    """docs/gates.md's worked example: examples/flaky (its agent, its cases, its gates.yaml)."""
    write_agent(tmp_path)
    for name in ("cases.yaml", "gates.yaml"):
        shutil.copy(EXAMPLE / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KIT_RUN_ID", raising=False)
    monkeypatch.delenv("KIT_GATES", raising=False)
    yield tmp_path
    forget_agent()


def gate(project, *extra: str) -> int:
    store = project / "evals.duckdb"
    argv = ["gate", "--store", str(store), "--config", str(project / "gates.yaml"), "--cases", "cases.yaml"]
    return kit([*argv, *extra])


@pytest.fixture
def two_runs(project):
    store = project / "evals.duckdb"
    cases = project / "cases.yaml"
    return run_cases(cases, store, BEFORE, version="v1"), run_cases(cases, store, AFTER, version="v3")


def test_the_issue_done_when(project, two_runs, capsys):
    """hard.min_pass_fraction 0.8; new_failures: significant; alpha 0.01 (examples/flaky/gates.yaml)."""
    before, after = two_runs
    capsys.readouterr()
    # 40/40, 39/40 and 38/40 under a floor of 0.8: the gate passes, and names the flaky cases.
    assert gate(project, "--run", before) == 0
    out = capsys.readouterr().out
    assert f"gate passed for run {before}" in out
    assert "flaky: case wobbly passed 39/40 (0.97), at or above its floor 0.80" in out
    assert "flaky: case jittery passed 38/40 (0.95), at or above its floor 0.80" in out

    # The second run against the first.
    assert gate(project, "--run", after, "--baseline", before) == 1
    said = capsys.readouterr()
    problems = [ln for ln in said.err.splitlines() if ln.startswith("  - ")]
    named = {re.search(r"case (\S+)", ln).group(1) for ln in problems}
    # A case that fell to 20/40 is named, with both fractions and its p-value.
    assert any(
        ln.startswith(f"  - significant drop vs baseline {before}: case wobbly 39/40 (0.97) → 20/40 (0.50), p = ")
        for ln in problems
    ), problems
    # 40/40 → 30/40 is named though 0.75 clears that case's own floor of 0.6: the drop is not chance.
    steady = [ln for ln in problems if "case steady" in ln]
    assert len(steady) == 1 and "40/40 (1.00) → 30/40 (0.75), p = 0.0010 < alpha 0.01" in steady[0], steady
    assert "Holm over 3 cases" in steady[0]
    # 38/40 → 37/40 is noise: not named as a problem, but listed.
    assert named == {"wobbly", "steady"}
    assert f"noise vs baseline {before}: case jittery 38/40 (0.95) → 37/40 (0.93), p = 0.50," in said.out
    assert "with 40 runs per case, a drop from 100% to 80% (40/40 to 32/40) is the smallest" in said.out


def test_a_run_that_only_slips_by_noise_passes(project, capsys):
    """The worked example's second run: 39/40 -> 37/40 and 38/40 -> 36/40 are listed as noise; the gate passes."""
    store = project / "evals.duckdb"
    before = run_cases(project / "cases.yaml", store, BEFORE, version="v1")
    noisy = run_cases(project / "cases.yaml", store, NOISY, version="v2")
    capsys.readouterr()
    assert gate(project, "--run", noisy, "--baseline", before) == 0
    out = capsys.readouterr().out
    assert f"noise vs baseline {before}: case wobbly 39/40 (0.97) → 37/40 (0.93), p = 0.92" in out
    assert f"noise vs baseline {before}: case jittery 38/40 (0.95) → 36/40 (0.90), p = 0.92" in out
    assert f"gate passed for run {noisy}" in out


def test_without_the_baseline_only_the_floors_decide(project, two_runs, capsys):
    _, after = two_runs
    capsys.readouterr()
    assert gate(project, "--run", after) == 1
    err = capsys.readouterr().err
    assert "hard fail: case wobbly check contains (20x): output lacks 'fine'" in err
    assert "(case passed 20/40 (0.50), under its floor 0.80)" in err
    assert "case steady" not in err and "case jittery" not in err  # 0.75 >= 0.6 and 0.925 >= 0.8


def test_the_default_floor_is_todays_behaviour(project, capsys):
    (project / "gates.yaml").write_text("baseline: {new_failures: fail}\n")  # the policy the run runs under
    before = run_cases(project / "cases.yaml", project / "evals.duckdb", BEFORE, version="v1")
    capsys.readouterr()
    assert gate(project, "--run", before) == 1  # 39/40 fails under the default 1.0...
    err = capsys.readouterr().err
    assert "case wobbly" in err and "case jittery" in err
    assert "case steady" not in err  # ...its own floor 0.6 still holds for steady


def _record(store, source: str, counts: dict[str, tuple[int, int]]) -> str:
    from kit.result import CaseRun, Result

    run_id = store.start_run(source, agent="desk", git_sha=None)
    for case_id, (passes, n) in counts.items():
        for attempt in range(n):
            ok = attempt < passes
            store.record(
                run_id, CaseRun(case_id, attempt, (Result("contains", ok, "" if ok else "output lacks 'fine'"),))
            )
    store.finish_run(run_id)
    return run_id


@pytest.mark.parametrize("source", ["deepeval", "promptfoo"])
def test_every_source_is_gated_alike(project, two_runs, source, capsys):
    """A DeepEval or Promptfoo run with the same counts gets the kit run's verdict, line for line."""
    kit_before, kit_after = two_runs
    store = open_store(project / "evals.duckdb")
    before, after = _record(store, source, BEFORE), _record(store, source, AFTER)
    capsys.readouterr()
    assert gate(project, "--run", kit_after, "--baseline", kit_before) == 1
    kit_lines = capsys.readouterr().err.replace(kit_before, "BASE").splitlines()[1:]
    assert gate(project, "--run", after, "--baseline", before) == 1
    lines = capsys.readouterr().err.replace(before, "BASE").splitlines()[1:]
    assert lines == kit_lines and len(lines) == 3
