"""The HTML report of a run of several agents, in a real headless Chromium: the agent tree, each call under
its agent, and the agent a failed scoped check names marked failing (the desk's recorded run with the bug)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from browser import needs_chromium, probe

from kit.case import load_suite, parse_case
from kit.cli import main as kit
from kit.evaluate import evaluate
from kit.store import open_store
from kit.trace import parse_trace

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "multiagent"
PROBE = """<script>
(function () {
  document.querySelector('#case-body tr.row').click();
  var text = function (sel) { return Array.prototype.map.call(document.querySelectorAll(sel), function (e) {
    return e.textContent.replace(/\\s+/g, ' ').trim(); }); };
  var out = {agents: text('.agents .agent'), bad: text('.agents .agent.bad'), handoffs: text('.agents > .via'),
             blocks: Array.prototype.map.call(document.querySelectorAll('.byagent'), function (b) {
               return [b.querySelector('.ah').textContent, b.classList.contains('bad'),
                       Array.prototype.map.call(b.querySelectorAll('.tool .name'), function (n) { return n.textContent; })];
             })};
  var pre = document.createElement('pre'); pre.id = 'probe'; pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script></body>"""


def _seen(tmp_path: Path, case: Any) -> dict[str, Any]:
    """What the report of the desk's run with the bug, judged by `case`, shows once its row is opened."""
    store = open_store(tmp_path / "evals.duckdb")
    run_id = store.start_run("kit", agent="_multiagent_desk:agents_desk", model="desk-model")
    trace = parse_trace(json.loads((FIXTURES / "agents_desk-bug.json").read_text()))
    store.record(run_id, evaluate(trace, case), trace)
    store.finish_run(run_id)
    out = tmp_path / "report.html"
    assert kit(["report", "--store", str(store.path), "--run", run_id, "--html", str(out)]) == 0
    return probe(out, PROBE, tmp_path, profile=tmp_path / "profile", timeout=60)


@needs_chromium
def test_the_report_shows_the_agent_tree_and_marks_the_failing_agent(tmp_path: Path) -> None:
    seen = _seen(tmp_path, load_suite(FIXTURES / "desk.yaml").cases[0])
    assert seen["agents"] == ["triagefailing", "↳ billing (handoff from triage)"]
    assert seen["bad"] == ["triagefailing"]
    assert seen["handoffs"] == ["handoff: triage → billing (handoff, after step 7)"]
    assert seen["blocks"] == [
        ["agent triagefailing", True, ["lookup_order", "issue_refund", "transfer_to_billing"]],
        ["agent billing", False, []],
    ]


@needs_chromium
def test_a_failed_handoff_marks_the_agent_handing_off(tmp_path: Path) -> None:
    checks = [{"type": "handoff", "from": "triage", "to": "billing", "before": "issue_refund"}]
    case = parse_case({"id": "desk", "input": "x", "checks": checks}, file=None, base_dir=None, invariants={})
    seen = _seen(tmp_path, case)
    assert seen["bad"] == ["triagefailing"]
    assert [b[:2] for b in seen["blocks"]] == [["agent triagefailing", True], ["agent billing", False]]
