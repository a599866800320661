"""A run carries its own rules: `kit gate` judges a run by the floors, runs and policy it recorded (never by
files read later, which it names when they changed), a run whose cases did not load fails whatever its
source, and an outage is never a baseline."""

from __future__ import annotations

import os

import pytest

from kit.cli import main as kit
from kit.gate.policy import GatePolicy
from kit.gate.rules import RunRules, run_rules
from kit.result import CaseRun, Result
from kit.store import open_store
from kit.store import queries as q
from tests.unit._fixed_agent import cases_yaml, forget_agent, run_cases, write_agent


@pytest.fixture
def project(tmp_path, monkeypatch):
    write_agent(tmp_path)
    monkeypatch.chdir(tmp_path)
    for name in ("KIT_RUN_ID", "KIT_GATES", "KIT_CASES", "KIT_STORE"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "gates.yaml").write_text("hard: {min_pass_fraction: 0.8}\n")
    yield tmp_path
    forget_agent()


def test_kit_gate_applies_the_floor_the_run_recorded_and_names_a_changed_case_file(project, capsys):
    """The issue's case: `kit run --cases flaky/cases.yaml` (c4's own floor 0.5), then `kit gate` with no
    --cases: c4 at 45/60 is held to 0.5, not gates.yaml's 0.8. Editing the floor after the run changes
    nothing, and the gate says the file changed."""
    (project / "flaky").mkdir()
    cases = project / "flaky" / "cases.yaml"
    cases.write_text(cases_yaml({"c4": (45, 60)}, floors={"c4": 0.5}))
    store = project / "evals.duckdb"
    run_id = run_cases(cases, store, {"c4": (45, 60)})
    capsys.readouterr()
    assert kit(["gate", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert f"gate passed for run {run_id}" in out
    assert "flaky: case c4 passed 45/60 (0.75), at or above its floor 0.50" in out
    assert "changed since the run" not in out

    cases.write_text(cases_yaml({"c4": (45, 60)}, floors={"c4": 0.9}))  # a stricter floor, after the run
    (project / "gates.yaml").write_text("hard: {min_pass_fraction: 1.0}\n")
    assert kit(["gate", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "at or above its floor 0.50" in out
    assert f"note: case file {cases} changed since the run" in out
    assert "judged by the floors and runs recorded with the run" in out
    assert f"note: the gate policy changed since run {run_id}" in out


def test_the_recorded_rules_hold_each_case_floor_runs_files_and_policy(project):
    cases = project / "cases.yaml"
    cases.write_text(cases_yaml({"a": (3, 3), "b": (1, 2)}, floors={"b": 0.5}))
    store = project / "evals.duckdb"
    run_id = run_cases(cases, store, {"a": (3, 3), "b": (1, 2)})
    with open_store(store).connect() as con:
        rules = RunRules.from_json(q.run_rules_json(con, run_id))
    assert rules is not None and rules.origin == "run" and rules.not_loaded == ()
    assert rules.cases["a"].floor == 0.8 and not rules.cases["a"].own and rules.cases["a"].runs == 3
    assert rules.cases["b"].floor == 0.5 and rules.cases["b"].own and rules.cases["b"].runs == 2
    import hashlib

    assert rules.files == {str(cases): hashlib.sha256(cases.read_bytes()).hexdigest()}
    assert rules.policy.hard.min_pass_fraction == 0.8
    assert RunRules.from_json(rules.to_json()) == rules


def test_a_kit_run_with_a_case_that_did_not_load_fails_its_gate(project, capsys):
    (project / "cases").mkdir()
    (project / "cases" / "good.yaml").write_text(cases_yaml({"a": (1, 1)}))
    (project / "cases" / "bad.yaml").write_text("id: broken\ninput: hi\nchecks: [{type: no_such_check}]\n")
    store = project / "evals.duckdb"
    argv = ["run", "--cases", "cases", "--agent", "flaky_agent:agent", "--store", str(store), "-q"]
    assert kit([*argv, "--pool", "thread"]) == 2
    capsys.readouterr()
    assert kit(["gate", "--store", str(store)]) == 1
    err = capsys.readouterr().err
    assert "case(s) or file(s) did not load" in err and "bad.yaml" in err


def test_a_deepeval_run_whose_cases_did_not_load_fails_its_gate(project, capsys):
    """The DeepEval session records its plan's rules and finishes such a run incomplete: `kit gate` fails it
    (it passed it "100%" before)."""
    from deepeval_metrics.session import EvalSession
    from kit.plan import make_plan
    from kit.settings import load_settings

    (project / "cases").mkdir()
    (project / "cases" / "good.yaml").write_text(cases_yaml({"a": (1, 1)}))
    (project / "cases" / "bad.yaml").write_text("id: broken\ninput: hi\nchecks: [{type: no_such_check}]\n")
    store = project / "evals.duckdb"
    plan = make_plan(load_settings({"cases": "cases", "store": str(store)}, root=project))
    environ = dict(os.environ)
    try:  # the session hands its plan to xdist workers through the environment
        session = EvalSession.begin(plan, "deepeval", agent="flaky_agent:agent", git_sha=None)
        session.store.record(session.run_id, CaseRun("a", 0, (Result("contains:fine", True, "ok"),)))
        session.finish()
    finally:
        os.environ.clear()
        os.environ.update(environ)
    capsys.readouterr()
    assert kit(["gate", "--store", str(store)]) == 1
    err = capsys.readouterr().err
    assert f"run {session.run_id} is incomplete" in err and "did not load" in err and "bad.yaml" in err


def _run(store, results: dict[str, bool], *, errored: bool = False, rules: RunRules | None = None) -> str:
    run_id = store.start_run("kit", agent="a:run", model="m", git_sha=None, rules=rules)
    for case_id, ok in results.items():
        if errored:
            store.record(run_id, CaseRun(case_id, 0, (), error="provider unavailable (HTTP 503)"))
        else:
            store.record(run_id, CaseRun(case_id, 0, (Result("no_pii", ok, "" if ok else "email in output"),)))
    store.finish_run(run_id)
    return run_id


def test_an_outage_is_never_the_baseline_and_the_gate_says_which_run_it_used(tmp_path, capsys):
    """40/40 -> outage (every attempt errored) -> 24/40: `previous` is the last good run, not the outage,
    so the fall is caught, and the gate names both."""
    store = open_store(tmp_path / "evals.duckdb")
    cases = [f"c{i:02}" for i in range(40)]
    good = _run(store, dict.fromkeys(cases, True))
    outage = _run(store, dict.fromkeys(cases, True), errored=True)
    _run(store, {c: i < 24 for i, c in enumerate(cases)})
    (tmp_path / "gates.yaml").write_text("hard: {fail_on_failure: false}\n")
    argv = ["gate", "--store", str(store.path), "--config", str(tmp_path / "gates.yaml")]
    assert kit([*argv, "--baseline", "previous"]) == 1
    said = capsys.readouterr()
    assert f"compared against baseline run {good}" in said.out
    assert f"passed over {outage} (40/40 attempts errored)" in said.out
    assert f"new failure vs baseline {good}: case c24 1/1 (1.00) → 0/1 (0.00)" in said.err
    assert "improvement" not in said.out
    with store.connect() as con:
        assert q.resolve_run(con, "previous") == good
    # make evals shows the same: what the run was judged by, and against which baseline and why.
    from kit.commands.gate import gate_run

    result = gate_run(store, "latest", GatePolicy(), baseline="previous")
    assert any(f"compared against baseline run {good}" in n and outage in n for n in result.context)
    # Named by its id, the outage is used, and the gate says what it is.
    assert kit([*argv, "--baseline", outage]) == 0
    assert f"baseline run {outage} (named by '{outage}') is an outage: 40/40 attempts errored" in (
        capsys.readouterr().out
    )


def test_a_share_of_errors_set_in_gates_yaml_makes_an_outage(tmp_path, capsys):
    store = open_store(tmp_path / "evals.duckdb")
    half = _run(store, {"a": True, "b": True})
    store.record(half, CaseRun("c", 0, (), error="timeout"))  # 1 of 3 errored
    _run(store, {"a": True, "b": True, "c": True})
    policy = GatePolicy.model_validate({"baseline": {"max_error_share": 0.2}})
    with store.connect() as con:
        assert q.baseline_choice(con, q.resolve_run(con, "latest"), 0.2).run_id is None
        assert q.baseline_choice(con, q.resolve_run(con, "latest"), 0.5).run_id == half
    assert policy.baseline.max_error_share == 0.2 and GatePolicy().baseline.max_error_share == q.MAX_ERROR_SHARE


def test_the_gate_reads_the_baselines_own_floors(tmp_path, capsys):
    """A case that met the floor its baseline recorded (0.5) and misses the one its run recorded is new."""
    store = open_store(tmp_path / "evals.duckdb")

    class _Suite:
        def __init__(self, floor: float) -> None:
            from kit.case import Case

            self.cases = [Case(id="a", input="x", runs=2, min_pass_fraction=floor)]
            self.errors: list = []

    lax, strict = run_rules(_Suite(0.5), GatePolicy()), run_rules(_Suite(1.0), GatePolicy())
    base = store.start_run("kit", agent="a:run", git_sha=None, rules=lax)
    for attempt, ok in enumerate((True, False)):
        store.record(base, CaseRun("a", attempt, (Result("no_pii", ok, "" if ok else "email"),)))
    store.finish_run(base)
    now = store.start_run("kit", agent="a:run", git_sha=None, rules=strict)
    for attempt, ok in enumerate((True, False)):
        store.record(now, CaseRun("a", attempt, (Result("no_pii", ok, "" if ok else "email"),)))
    store.finish_run(now)
    assert kit(["gate", "--store", str(store.path), "--run", now, "--baseline", base]) == 1
    said = capsys.readouterr()
    assert "(case passed 1/2 (0.50), under its floor 1.00)" in said.err
    assert f"new failure vs baseline {base}: case a 1/2 (0.50) → 1/2 (0.50), under its floor 1.00" in said.out


def test_a_promptfoo_run_records_the_rules_it_ran_under(project, capsys):
    """`kit ingest promptfoo` (what Promptfoo's store hook runs) records the plan's rules with a golden run:
    its case's own floor holds it, and a case file that did not load fails its gate."""
    import json

    from tests.unit.test_ingest import _comp, _result

    (project / "cases").mkdir()
    (project / "cases" / "good.yaml").write_text(cases_yaml({"refund": (1, 2)}, floors={"refund": 0.5}))
    results = [
        _result(i, "refund", "Refund issued" if i == 0 else "No", [_comp("contains", "Refund", i == 0)])
        for i in range(2)
    ]
    pf = {"evalId": "eval-rules", "results": {"version": 3, "results": results}, "config": {}}
    (project / "out.json").write_text(json.dumps(pf))
    (project / "pyproject.toml").write_text('[tool.kit]\ncases = "cases"\n')
    store = project / "evals.duckdb"
    assert kit(["ingest", "promptfoo", "out.json", "--store", str(store)]) == 0
    capsys.readouterr()
    assert kit(["gate", "--store", str(store)]) == 0  # 1/2 over its own floor 0.5 (gates.yaml says 0.8)
    out = capsys.readouterr().out
    assert "at or above its floor 0.50" in out and "rules were read from the settings when its results were" in out

    (project / "cases" / "bad.yaml").write_text("id: broken\ninput: hi\nchecks: [{type: no_such_check}]\n")
    pf["evalId"] = "eval-rules-2"
    (project / "out.json").write_text(json.dumps(pf))
    assert kit(["ingest", "promptfoo", "out.json", "--store", str(store)]) == 0
    capsys.readouterr()
    assert kit(["gate", "--store", str(store)]) == 1
    assert "did not load" in capsys.readouterr().err

    # A red team's run (its tests from Promptfoo's plugins) records the policy alone: the golden cases'
    # load errors and floors are not its own.
    attack = _result(0, "redteam/x", "No", [_comp("contains", "No", True)])
    attack["testCase"]["metadata"]["pluginId"] = "harmful:hate"
    pf = {"evalId": "eval-rt", "results": {"version": 3, "results": [attack]}, "config": {}}
    (project / "rt.json").write_text(json.dumps(pf))
    assert kit(["ingest", "promptfoo", "rt.json", "--store", str(store)]) == 0
    capsys.readouterr()
    assert kit(["gate", "--store", str(store), "--run", "promptfoo-eval-rt"]) == 0
    said = capsys.readouterr()
    assert "did not load" not in said.err and "no rules of its own" not in said.out


def test_compare_and_the_report_tell_chance_by_the_alpha_the_run_recorded(tmp_path, capsys):
    """gates.yaml says alpha 0.05 now; the later run ran under 0.2: its comparison uses 0.2."""
    store = open_store(tmp_path / "evals.duckdb")
    rules = RunRules(policy=GatePolicy.model_validate({"baseline": {"alpha": 0.2}}))
    _run(store, {"a": True, "b": True})
    _run(store, {"a": True, "b": False}, rules=rules)
    assert kit(["compare", "--store", str(store.path)]) == 0
    assert "alpha 0.2" in capsys.readouterr().out
    md = tmp_path / "compare.md"
    assert kit(["report", "--store", str(store.path), "--md", str(md)]) == 0
    assert "alpha 0.2" in md.read_text()


def test_make_evals_picks_baselines_by_the_share_gates_yaml_sets(tmp_path):
    from kit.pipeline.evals import baselines_for

    store = open_store(tmp_path / "evals.duckdb")
    half = _run(store, {"a": True, "b": True})
    store.record(half, CaseRun("c", 0, (), error="timeout"))  # 1 of 3 errored
    latest = _run(store, {"a": True, "b": True, "c": True})
    strict = tmp_path / "gates.yaml"
    strict.write_text("baseline: {max_error_share: 0.2}\n")
    with store.connect() as con:
        assert baselines_for(con, [latest], strict) == {latest: None}
        assert baselines_for(con, [latest], tmp_path / "absent.yaml") == {latest: half}
