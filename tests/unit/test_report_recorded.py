"""The report reads what the run recorded: the text totals say "cost not recorded" where no trace gave a cost
and no model was priced (never "$0.0000"), and the page's payload carries each case's recorded floor and the
agent each `handoff` check holds to account, by the check's type."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kit.case import load_suite
from kit.gate.policy import GatePolicy
from kit.gate.rules import run_rules
from kit.report import page_model
from kit.report.data import gather
from kit.report.text import render
from kit.runner import invoke
from kit.runner.agents import load_agent
from kit.store import open_store

CASE = """\
- id: c
  input: hi
  min_pass_fraction: 0.75
  checks:
    - {type: contains, text: hello}
    - {type: handoff, name: billing refunds, from: triage, to: billing}
    - {type: handoff, from: billing, to: triage, max: 0}
"""


def _stored(tmp_path: Path, agent: str, *, rules: bool = True) -> tuple[Any, str]:
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASE)
    suite = load_suite(cases)
    store = open_store(tmp_path / f"{agent}.duckdb")
    recorded = {"rules": run_rules(suite, GatePolicy())} if rules else {}
    run_id = store.start_run("kit", agent=agent, **recorded)
    inv = invoke(load_agent(f"tests.unit.test_pricing:{agent}"), suite.cases[0], 0, timeout=10)
    store.record(run_id, inv.case_run, inv.trace)
    store.finish_run(run_id)
    return store, run_id


def test_text_totals_say_cost_not_recorded_for_an_unpriced_model(tmp_path: Path) -> None:
    store, run_id = _stored(tmp_path, "unknown_model")
    text = render(gather(store, run_id))
    assert "cost not recorded, 1500 tokens" in text and "$" not in text
    store, run_id = _stored(tmp_path, "known_model")
    assert "cost $0.0075, 1500 tokens" in render(gather(store, run_id))


def test_the_page_carries_the_recorded_floor_and_the_handoff_checks_by_type(tmp_path: Path) -> None:
    store, run_id = _stored(tmp_path, "unknown_model")
    with store.connect() as con:
        payload, _ = page_model.build(con, [run_id], k=2)
    [row] = payload["rows"]
    assert row["flo"] == 0.75
    named = {payload["S"][int(i)]: who for i, who in row["ho"].items()}
    assert named == {"billing refunds": "triage", "handoff:billing>triage": "billing"}
    [attempt] = row["att"]
    assert attempt["co"] is None  # the page shows "not recorded"
    json.dumps(payload)


def test_a_run_without_rules_or_with_an_edited_case_file_gives_no_floor_or_types(tmp_path: Path) -> None:
    store, run_id = _stored(tmp_path, "unknown_model", rules=False)
    with store.connect() as con:
        [row] = page_model.build(con, [run_id], k=2)[0]["rows"]
    assert row["flo"] is None and row["ho"] is None
    store, run_id = _stored(tmp_path, "known_model")
    (tmp_path / "cases.yaml").write_text(CASE.replace("name: billing refunds, ", ""))
    with store.connect() as con:
        [row] = page_model.build(con, [run_id], k=2)[0]["rows"]
    assert row["flo"] == 0.75  # as recorded with the run
    assert row["ho"] is None  # the file changed: its checks may not be the ones that ran
