"""Read-only questions the HTML page asks of the store: which runs belong together, every case run with
its trace and checks, judge calls, like-with-like trends and a side-by-side comparison of two runs."""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb

from kit.aggregate import Evidence, evidence
from kit.store import queries as q

# Runs of other sources recorded this close to the chosen run belong to the same `make evals`.
BATCH_WINDOW = dt.timedelta(hours=1)
ORDER = {"kit": 0, "deepeval": 1, "promptfoo": 2, "redteam": 3}  # the order of `make evals`' stages


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def display_source(source: str, case_ids: list[str] | set[str]) -> str:
    """The red team lands under source `promptfoo`; a reader wants it apart from the golden eval."""
    if source == "promptfoo" and case_ids and all(str(c).startswith("redteam/") for c in case_ids):
        return "redteam"
    return source


def runs_info(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    """The runs with their case-set fingerprint, case-run counts, cost and latency, in the order given."""
    rows = _rows(
        con,
        f"""SELECT r.run_id, r.source, {q.kind_sql("r")} AS kind, r.started_at, r.git_sha, r.agent, r.model,
                  r.config_hash, r.kit_version, r.status, count(c.run_id) AS runs, count_if(c.passed) AS passed,
                  count(DISTINCT c.case_id) AS cases, sum(c.cost_usd) AS cost_usd, avg(c.latency_ms) AS latency_ms,
                  list(DISTINCT c.case_id) FILTER (WHERE c.case_id IS NOT NULL) AS case_ids,
                  md5(coalesce(string_agg(DISTINCT c.case_id, chr(10) ORDER BY c.case_id), '')) AS case_set
           FROM runs r LEFT JOIN case_results c USING (run_id)
           WHERE r.run_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY ALL""",
        [run_ids],
    )
    by_id = {r["run_id"]: r for r in rows}
    out = []
    for run_id in run_ids:
        r = by_id.get(run_id)
        if r is None:
            continue
        r["display_source"] = display_source(r["source"], r.pop("case_ids") or [])
        r["control"] = q.is_control(r)
        r["pass_rate"] = r["passed"] / r["runs"] if r["runs"] else None
        out.append(r)
    return out


def batch(con: duckdb.DuckDBPyConnection, run_id: str, window: dt.timedelta = BATCH_WINDOW) -> list[str]:
    """The runs that belong with `run_id` (what one `make evals` wrote): the runs of its `make evals` (the
    evals id every stage's run carries: never a later invocation's), else the latest run of each other source
    and agent recorded within `window` of it (runs written outside `make evals`). Runs of another agent on the
    same source (and kind: the red team is apart from the Promptfoo eval) are another evaluation."""
    evals = q.last_evals(con)
    if run_id in evals:  # `make evals` named its runs: no guessing
        return _in_stage_order(runs_info(con, evals))
    anchor = q.run_info(con, run_id)
    if anchor.get("evals_id"):
        same = q.evals_runs(con, anchor["evals_id"])
        return _in_stage_order(runs_info(con, [run_id, *(r for r in same if r != run_id)]))
    started = anchor["started_at"]
    if started is None:
        return [run_id]
    rows = con.execute(
        """SELECT run_id FROM (
             SELECT run_id, started_at, row_number() OVER (
               PARTITION BY source, coalesce(agent, ''), starts_with(coalesce(model, ''), 'control-')
               ORDER BY started_at DESC, run_id DESC) AS nth
             FROM runs WHERE started_at BETWEEN ? AND ?
               AND NOT (source = ? AND coalesce(agent, '') = coalesce(?, '')))
           WHERE nth = 1 ORDER BY started_at, run_id""",
        [started - window, started + window, anchor["source"], anchor.get("agent")],
    ).fetchall()
    found = runs_info(con, [run_id, *(r[0] for r in rows)])
    kind = found[0]["display_source"]
    return _in_stage_order([found[0], *(r for r in found[1:] if r["display_source"] != kind)])


def _in_stage_order(runs: list[dict[str, Any]]) -> list[str]:
    runs = sorted(runs, key=lambda r: (r["control"], ORDER.get(r["display_source"], len(ORDER)), str(r["started_at"])))
    return [r["run_id"] for r in runs]


def case_runs(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    return _rows(
        con,
        """SELECT run_id, case_id, attempt, passed, outcome, error, steps, tokens, cost_usd, latency_ms, trace
           FROM case_results WHERE run_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY run_id, case_id, attempt""",
        [run_ids],
    )


def check_rows(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    return _rows(
        con,
        """SELECT run_id, case_id, attempt, "check", gate, outcome, score, threshold, reason, traceback
           FROM check_results WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
           ORDER BY run_id, case_id, attempt, gate, "check" """,
        [run_ids],
    )


def judge_rows(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    return _rows(
        con,
        """SELECT run_id, case_id, attempt, "check", judge_model, rubric_hash, raw_answer, score, outcome
           FROM judge_calls WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
           ORDER BY run_id, case_id, attempt, "check", recorded_at""",
        [run_ids],
    )


def trend(con: duckdb.DuckDBPyConnection, run: dict[str, Any], limit: int = 20) -> list[dict[str, Any]]:
    """Earlier runs like `run`: same source, same agent and the very same case set, oldest first, up to and
    including `run` itself. Runs of another agent or case set are a different series, never a point here."""
    return _rows(
        con,
        """SELECT * FROM (
             SELECT r.run_id, r.started_at, r.model, r.git_sha, r.status,
                    count(c.run_id) AS runs, count_if(c.passed) AS passed,
                    count_if(c.passed) / nullif(count(c.run_id), 0) AS pass_rate,
                    md5(coalesce(string_agg(DISTINCT c.case_id, chr(10) ORDER BY c.case_id), '')) AS case_set
             FROM runs r LEFT JOIN case_results c USING (run_id)
             WHERE r.source = ? AND coalesce(r.agent, '') = coalesce(?, '')
               AND (r.started_at, r.run_id) <= (?, ?)
             GROUP BY ALL HAVING case_set = ?
             ORDER BY r.started_at DESC, r.run_id DESC LIMIT ?)
           ORDER BY started_at, run_id""",
        [run["source"], run.get("agent"), run["started_at"], run["run_id"], run["case_set"], limit],
    )


@dataclass
class CaseSide:
    n: int
    c: int
    cost_usd: float | None  # mean per attempt
    latency_ms: float | None  # mean per attempt
    failing: dict[str, int] = field(default_factory=dict)  # hard check -> attempts it failed or errored

    @property
    def fraction(self) -> float:
        return self.c / self.n if self.n else 0.0


@dataclass
class CaseDelta:
    case_id: str
    a: CaseSide | None
    b: CaseSide | None
    flip: str | None  # "pass→fail", "fail→pass" or None
    new_failing: list[str]  # hard checks failing in B, not in A
    fixed: list[str]  # hard checks failing in A, not in B


@dataclass
class SideBySide:
    a: dict[str, Any]  # runs_info rows
    b: dict[str, Any]
    k: int
    cases: list[CaseDelta]
    suite_pass_hat_k: tuple[dict[int, float], dict[int, float]]
    notes: list[str]
    evidence: Evidence  # each case's change told from chance, flaky cases, pass^k intervals (kit.aggregate)
    # B's cases under their floor, with the floor (the gate's kit.gate.verdict.under_floor): never "noise".
    under_floor: Mapping[str, float] = field(default_factory=dict)

    @property
    def flips(self) -> list[CaseDelta]:
        return [c for c in self.cases if c.flip]


def _sides(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, CaseSide]:
    per = _rows(
        con,
        """SELECT case_id, count(*) AS n, count_if(passed) AS c, avg(cost_usd) AS cost, avg(latency_ms) AS lat
           FROM case_results WHERE run_id = ? GROUP BY case_id""",
        [run_id],
    )
    sides = {r["case_id"]: CaseSide(r["n"], r["c"], r["cost"], r["lat"]) for r in per}
    for r in con.execute(
        """SELECT case_id, "check", count(*) FROM check_results
           WHERE run_id = ? AND gate = 'hard' AND outcome IN ('fail', 'error') GROUP BY ALL""",
        [run_id],
    ).fetchall():
        if r[0] in sides:
            sides[r[0]].failing[r[1]] = int(r[2])
    return sides


def side_by_side(
    con: duckdb.DuckDBPyConnection,
    a: str,
    b: str,
    k: int = 2,
    alpha: float = 0.05,
    under_floor: Mapping[str, float] | None = None,
) -> SideBySide:
    """Run A against run B, case by case: a case passes a run when every attempt passed (as in
    kit.store.queries.compare); a flip names the hard checks that changed; `evidence` says which changes
    chance does not explain at `alpha` (gates.yaml's baseline.alpha), as the gate decides them.
    `under_floor`: B's cases under their floor, as the gate found them (shown as such, never as noise)."""
    info = {r["run_id"]: r for r in runs_info(con, [a, b])}
    sa, sb = _sides(con, a), _sides(con, b)
    cases = []
    for case_id in sorted(sa.keys() | sb.keys()):
        x, y = sa.get(case_id), sb.get(case_id)
        flip = None
        if x and y:
            ok_a, ok_b = x.c == x.n, y.c == y.n
            flip = "pass→fail" if ok_a and not ok_b else ("fail→pass" if ok_b and not ok_a else None)
        fa, fb = set(x.failing if x else ()), set(y.failing if y else ())
        cases.append(CaseDelta(case_id, x, y, flip, sorted(fb - fa), sorted(fa - fb)))
    # Flips first, then the largest moves, then the rest by name.
    order = {"pass→fail": 0, "fail→pass": 1, None: 2}
    cases.sort(key=lambda d: (order[d.flip], -abs(_move(d)), d.case_id))
    notes = []
    ra, rb = info[a], info[b]
    if ra["source"] != rb["source"]:
        notes.append(f"A is a {ra['source']} run and B a {rb['source']} run.")
    if (ra.get("agent") or "") != (rb.get("agent") or ""):
        notes.append(f"The runs used different agents ({ra.get('agent') or '-'} and {rb.get('agent') or '-'}).")
    if ra["case_set"] != rb["case_set"]:
        common = len(sa.keys() & sb.keys())
        notes.append(
            f"The case sets differ: {common} cases in both, {len(sa.keys() - sb.keys())} only in A, "
            f"{len(sb.keys() - sa.keys())} only in B; flips are counted over the common cases only."
        )
    ev = evidence(q.case_counts(con, a), q.case_counts(con, b), alpha, ks=(1, k))
    hats = (q.suite_pass_hat_k(con, a), q.suite_pass_hat_k(con, b))
    return SideBySide(ra, rb, k, cases, hats, notes, ev, dict(under_floor or {}))


def _move(d: CaseDelta) -> float:
    return (d.b.fraction if d.b else 0.0) - (d.a.fraction if d.a else 0.0) if d.a and d.b else 0.0


def case_tags(path: Any) -> dict[str, list[str]]:
    """Case id -> tags, from the case files (a report of a store whose case files are gone has none)."""
    from kit.case import load_suite
    from kit.errors import KitInputError

    try:
        suite = load_suite(path)
    except (KitInputError, OSError, ValueError):
        return {}
    return {c.id: list(c.tags) for c in suite.cases}


def group(rows: list[dict[str, Any]], *keys: str) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        out[tuple(r[k] for k in keys)].append(r)
    return out
