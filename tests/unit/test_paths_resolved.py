"""Paths a run stores are resolved, so a command run from another folder finds them: the case files of a run's
recorded rules, and the results file `kit ingest promptfoo` read (which `kit redteam keep` reads again)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.case import load_suite
from kit.commands.redteam import _results_file
from kit.gate.policy import GatePolicy
from kit.gate.rules import run_rules
from kit.store import open_store
from kit.store.ingest.promptfoo import ingest
from tests.unit.test_ingest import _comp, _result


@pytest.fixture
def elsewhere(tmp_path: Path) -> Path:
    (tmp_path / "project").mkdir()
    (tmp_path / "elsewhere").mkdir()
    return tmp_path / "elsewhere"


def test_a_runs_case_files_are_found_from_another_folder(tmp_path, elsewhere, monkeypatch):
    project = tmp_path / "project"
    (project / "cases.yaml").write_text('id: a\ninput: "hi"\nchecks:\n  - {type: contains, text: x}\n')
    monkeypatch.chdir(project)
    rules = run_rules(load_suite(Path("cases.yaml")), GatePolicy())
    assert list(rules.files) == [str(project / "cases.yaml")]
    assert rules.cases["a"].file == str(project / "cases.yaml")
    monkeypatch.chdir(elsewhere)
    assert rules.changed_files() == []  # not "case file cases.yaml is gone since the run"


def test_kit_redteam_keep_finds_the_results_file_ingested_from_another_folder(tmp_path, elsewhere, monkeypatch):
    project = tmp_path / "project"
    attack = _result(0, "redteam/goal-x/basic", "no", [_comp("contains", "x", False)])
    attack["testCase"]["metadata"]["pluginId"] = "kit-goal"  # a red-team plugin made it
    (project / "results.json").write_text(json.dumps({"evalId": "eval-rt", "results": {"results": [attack]}}))
    store = open_store(tmp_path / "evals.duckdb")
    monkeypatch.chdir(project)
    ingest(store, Path("results.json"))
    monkeypatch.chdir(elsewhere)
    _, path = _results_file(store, "latest")
    assert path == project / "results.json"
