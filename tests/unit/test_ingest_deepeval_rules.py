"""`kit ingest deepeval FILE` records the rules its run ran under (kit.gate.rules), as `kit ingest promptfoo`
and `kit run` do: the gate holds each case to its own floor, and fails the run when a case file did not load."""

from __future__ import annotations

import pytest

from kit.cli import main as kit
from kit.gate.rules import RunRules
from kit.store import open_store
from kit.store import queries as q
from tests.unit._fixed_agent import cases_yaml
from tests.unit.test_ingest import _deepeval_file


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
    for name in ("KIT_RUN_ID", "KIT_GATES", "KIT_CASES", "KIT_STORE", "KIT_PLAN"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "gates.yaml").write_text("hard: {min_pass_fraction: 0.8}\n")
    (tmp_path / "cases").mkdir()
    (tmp_path / "cases" / "c.yaml").write_text(cases_yaml({"refund": (1, 2), "pii": (1, 1)}, floors={"refund": 0.5}))
    (tmp_path / "pyproject.toml").write_text('[tool.kit]\ncases = "cases"\n')
    return tmp_path


def test_a_deepeval_run_records_the_rules_it_ran_under(project, capsys):
    export, _ = _deepeval_file(project / "deepeval")
    store = project / "evals.duckdb"
    assert kit(["ingest", "deepeval", str(export), "--store", str(store)]) == 0
    with open_store(store).connect() as con:
        [run_id] = [r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()]
        rules = RunRules.from_json(q.run_rules_json(con, run_id))
    assert rules is not None and rules.origin == "ingest"
    # stored resolved, so a command run from another folder finds the case file
    assert rules.floors() == {"refund": 0.5, "pii": 0.8}
    assert list(rules.files) == [str((project / "cases" / "c.yaml").resolve())]
    capsys.readouterr()
    assert kit(["gate", "--store", str(store), "--run", run_id]) == 0  # refund 1/2 over its own floor 0.5
    assert "at or above its floor 0.50" in capsys.readouterr().out


def test_a_deepeval_run_whose_case_file_did_not_load_fails_its_gate(project, capsys):
    (project / "cases" / "bad.yaml").write_text("id: broken\ninput: hi\nchecks: [{type: no_such_check}]\n")
    export, _ = _deepeval_file(project / "deepeval")
    store = project / "evals.duckdb"
    assert kit(["ingest", "deepeval", str(export), "--store", str(store)]) == 0
    capsys.readouterr()
    assert kit(["gate", "--store", str(store)]) == 1
    assert "did not load" in capsys.readouterr().err
