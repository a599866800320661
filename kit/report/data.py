"""Everything one report shows, gathered from the store in one short locked session."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kit.judge.agreement import calibration_state
from kit.store import Store
from kit.store import queries as q


@dataclass
class ReportData:
    run: dict[str, Any]
    k: int
    cases: list[dict[str, Any]]
    failing: list[dict[str, Any]]
    soft: list[dict[str, Any]]
    totals: dict[str, Any]
    suite_pass_hat_k: dict[int, float]
    recent: list[dict[str, Any]]
    comparison: q.Comparison | None  # the baseline run (queries.baseline_run) against this one


def gather(store: Store, ref: str = "latest", *, k: int = 2, source: str | None = None, recent: int = 20) -> ReportData:
    with store.connect() as con:
        run_id = q.resolve_run(con, ref, source)
        run = q.run_info(con, run_id)
        prev = q.baseline_run(con, run_id)
        return ReportData(
            run=run,
            k=k,
            cases=q.case_table(con, run_id, k),
            failing=q.failing_checks(con, run_id),
            soft=q.soft_gates(con, run_id),
            totals=q.totals(con, run_id),
            suite_pass_hat_k=q.suite_pass_hat_k(con, run_id),
            recent=q.recent_runs(con, recent, run["source"]),
            comparison=q.compare(con, prev, run_id) if prev else None,
        )


def soft_gate_calibrations(con: Any, run_ids: Sequence[str]) -> list[dict[str, Any]]:
    """Each rubric soft gate of these runs (`queries.soft_gates`, with its `run_id`), with the most judge
    samples behind one of its verdicts and its `calibration` state (`calibration_state`): what the
    `make evals` summary and the report show beside it."""
    calibrations = q.latest_calibrations(con)
    rows = []
    for run_id in run_ids:
        judges = q.soft_gate_judges(con, run_id)
        for gate in q.soft_gates(con, run_id):
            if not gate["check"].startswith("rubric:"):
                continue  # only the kit's rubrics are calibrated (kit calibrate)
            judge = judges.get(gate["check"])
            state = calibration_state(judge, calibrations.get(gate["check"]))
            samples = judge["samples"] if judge else None
            rows.append({**gate, "run_id": run_id, "samples": samples, "calibration": state})
    return rows
