"""Everything one report shows, gathered from the store in one short locked session."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

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
