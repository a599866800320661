"""`kit gate --config FILE`: the policy a person names on the command line judges the run, over the one the run
recorded, and the output says which policy that was. A case's own floor is the run's and stays."""

from __future__ import annotations

import pytest

from kit.cli import main as kit
from tests.unit._fixed_agent import cases_yaml, forget_agent, run_cases, write_agent


@pytest.fixture
def project(tmp_path, monkeypatch):
    write_agent(tmp_path)
    monkeypatch.chdir(tmp_path)
    for name in ("KIT_RUN_ID", "KIT_GATES", "KIT_CASES", "KIT_STORE", "KIT_PLAN"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "pyproject.toml").write_text("[tool.kit]\n")
    (tmp_path / "gates.yaml").write_text("hard: {min_pass_fraction: 1.0}\n")
    (tmp_path / "ci-gates.yaml").write_text("hard: {min_pass_fraction: 0.8}\n")
    yield tmp_path
    forget_agent()


def test_the_named_policy_judges_the_run_and_the_output_says_so(project, capsys):
    """The run recorded gates.yaml (floor 1.0): every case is over ci-gates.yaml's 0.8, so `kit gate --config
    ci-gates.yaml` passes it, where `kit gate` alone fails it by the recorded floor."""
    counts = {"a": (9, 10), "b": (5, 5)}
    cases = project / "cases.yaml"
    cases.write_text(cases_yaml(counts))
    store = project / "evals.duckdb"
    run_id = run_cases(cases, store, counts)
    capsys.readouterr()

    assert kit(["gate", "--store", str(store)]) == 1
    assert (
        "case a check contains (1x): output lacks 'fine' (case passed 9/10 (0.90), under its floor 1.00)"
        in capsys.readouterr().err
    )

    assert kit(["gate", "--store", str(store), "--config", "ci-gates.yaml"]) == 0
    out = capsys.readouterr().out
    assert "note: policy: ci-gates.yaml (named on the command line; the run recorded gates.yaml)" in out
    assert f"gate passed for run {run_id}" in out


def test_a_case_keeps_its_own_floor_under_the_named_policy(project, capsys):
    counts = {"a": (9, 10), "own": (9, 10)}
    cases = project / "cases.yaml"
    cases.write_text(cases_yaml(counts, floors={"own": 0.95}))
    store = project / "evals.duckdb"
    run_cases(cases, store, counts)
    capsys.readouterr()
    assert kit(["gate", "--store", str(store), "--config", "ci-gates.yaml"]) == 1
    err = capsys.readouterr().err
    assert "case own check contains (1x): output lacks 'fine' (case passed 9/10 (0.90), under its floor 0.95)" in err
    assert "case a check" not in err
