"""The HTML report, in a real headless Chromium, reads what the run recorded: each case's floor (the run's
rules) beside its pass fraction, the agent a failed `handoff` check holds to account by the check's type
whatever the case named it, and a cost no trace gave as "not recorded" (never "$-" or "$0.0000")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser import chromium, needs_chromium, probe

from kit.case import load_suite
from kit.cli import main as kit
from kit.evaluate import evaluate
from kit.gate.policy import GatePolicy
from kit.gate.rules import run_rules
from kit.store import open_store
from kit.trace import parse_trace

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "multiagent"
PROBE = """<script>
(function () {
  var text = function (sel) { return Array.prototype.map.call(document.querySelectorAll(sel), function (e) {
    return e.textContent.replace(/\\s+/g, ' ').trim(); }); };
  var passed = text('#case-body tr.row td.n:nth-child(3)');
  document.querySelector('#case-body tr.row').click();
  var out = {passed: passed, floors: text('#case-body .floor'), under: text('#case-body .floor.under'),
             bad: text('.agents .agent.bad'), meta: text('.attempt > .meta')};
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script></body>"""
CASE = """\
- id: desk
  input: "Please refund order ORD-7."
  min_pass_fraction: 0.9
  checks:
    - {type: handoff, name: billing refunds first, from: triage, to: billing, before: issue_refund}
"""


def _report(tmp_path: Path, *, rules: bool = True, shot: Path | None = None) -> dict[str, Any]:
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASE)
    suite = load_suite(cases)
    store = open_store(tmp_path / "evals.duckdb")
    recorded = {"rules": run_rules(suite, GatePolicy())} if rules else {}
    run_id = store.start_run("kit", agent="_multiagent_desk:agents_desk", model="desk-model", **recorded)
    trace = parse_trace(json.loads((FIXTURES / "agents_desk-bug.json").read_text()))
    store.record(run_id, evaluate(trace, suite.cases[0]), trace)
    store.finish_run(run_id)
    out = tmp_path / "report.html"
    assert kit(["report", "--store", str(store.path), "--run", run_id, "--html", str(out)]) == 0
    seen = probe(out, PROBE, tmp_path, profile=tmp_path / "profile", timeout=60)
    if shot is not None:
        chromium(
            f"--screenshot={shot}", "--window-size=1300,1800", out.as_uri(), profile=tmp_path / "profile", timeout=60
        )
    return seen


@needs_chromium
def test_the_report_shows_the_recorded_floor_the_handoff_at_fault_and_an_unrecorded_cost(tmp_path: Path) -> None:
    seen = _report(tmp_path)
    assert seen["floors"] == ["0.00 < floor 0.90"] and seen["under"] == seen["floors"]
    assert seen["passed"] == ["0/10.00 < floor 0.90"]
    # `billing refunds first` is a handoff check from triage: triage is marked, though its name says nothing.
    assert seen["bad"] == ["triagefailing"]
    [meta] = seen["meta"]
    assert "cost not recorded" in meta and "$" not in meta


@needs_chromium
def test_without_recorded_rules_no_floor_is_shown_and_a_named_handoff_is_not_guessed(tmp_path: Path) -> None:
    seen = _report(tmp_path, rules=False)
    assert seen["floors"] == [] and seen["passed"] == ["0/1"]
    assert seen["bad"] == []  # the check's type is unknown here, and its name is not the default one
