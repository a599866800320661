"""Read side: the questions reports, comparisons and gates ask of the store, answered in SQL.

Aggregates follow kit.aggregate's definitions exactly: pass fraction c/n, pass^k = C(c,k)/C(n,k),
flaky when 0 < c < n; a case passes a suite run when every one of its attempts passed.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

# C(c,k)/C(n,k) = prod_{i<k} (c-i)/(n-i); NULL when k is outside 1..n, as kit.aggregate refuses those.
_MACROS = (
    """CREATE OR REPLACE TEMP MACRO pass_hat_k(c, n, k) AS CASE
         WHEN k < 1 OR k > n THEN NULL WHEN k > c THEN 0.0
         ELSE (SELECT product((c - i)::DOUBLE / (n - i)) FROM range(k) t(i)) END""",
)


def install_macros(con: duckdb.DuckDBPyConnection) -> None:
    for m in _MACROS:
        con.execute(m)


class RunNotFound(LookupError):
    pass


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cur = con.execute(sql, params or [])
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


# `make evals` names the runs it gated in a file beside the store: `latest` means those runs while no newer
# run has been written. (The store's tables stay as the contract has them.)
LAST_EVALS_SUFFIX = ".last-evals.json"


# A run's kind (golden, redteam, control); a run stored before kinds were recorded is a control when its
# model or agent is labelled `control-...`, else golden.
def kind_sql(alias: str = "") -> str:
    """The SQL expression of a run's kind, for the `runs` table (or its alias)."""
    a = f"{alias}." if alias else ""
    legacy = f"(starts_with(coalesce({a}model, ''), 'control-') OR starts_with(coalesce({a}agent, ''), 'control-'))"
    return f"coalesce({a}kind, CASE WHEN {legacy} THEN 'control' ELSE 'golden' END)"


KIND_SQL = kind_sql()
# What the summary calls a run's stage: its source, with its kind when it is not a golden eval
# (`promptfoo/redteam`, `promptfoo/control`), so an eval and a red team are never added into one line.
STAGE_SQL = f"r.source || CASE WHEN {kind_sql('r')} = 'golden' THEN '' ELSE '/' || {kind_sql('r')} END"
_NOT_CONTROL = f"{KIND_SQL} <> 'control'"


def last_evals_file(store_path: str | Path) -> Path:
    return Path(str(store_path) + LAST_EVALS_SUFFIX)


def _db_path(con: duckdb.DuckDBPyConnection) -> str | None:
    row = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()
    return str(row[0]) if row and row[0] else None


def last_evals(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The gated runs of the last `make evals` on this store, oldest first, while they are still the newest
    gated runs (a `kit run` after it makes that run `latest` instead); [] when there is none."""
    path = _db_path(con)
    if path is None:
        return []
    try:
        wanted = json.loads(last_evals_file(path).read_text(encoding="utf-8")).get("gated") or []
    except (OSError, ValueError, AttributeError):
        return []
    rows = con.execute(
        f"SELECT run_id FROM runs WHERE {_NOT_CONTROL} ORDER BY started_at DESC, run_id DESC LIMIT 1"
    ).fetchall()
    present = {
        r[0]
        for r in con.execute(
            "SELECT run_id FROM runs WHERE run_id IN (SELECT unnest(?::VARCHAR[]))", [list(map(str, wanted))]
        ).fetchall()
    }
    if not rows or rows[0][0] not in present:
        return []
    return [r for r in wanted if r in present]


def _latest(con: duckdb.DuckDBPyConnection, source: str | None, back: int = 0, kind: str | None = None) -> str | None:
    if back == 0:
        evals = last_evals(con)
        if evals:
            # A single run stands for them: the kit's runner's (the one `make evals` reports on), else the first
            # golden eval, else the first.
            info = {r: run_info(con, r) for r in evals}
            mine = [
                r
                for r in evals
                if (source is None or info[r]["source"] == source) and (kind is None or info[r]["kind"] == kind)
            ]
            if mine:
                return next(
                    (r for r in mine if info[r]["source"] == "kit"),
                    next((r for r in mine if info[r]["kind"] == "golden"), mine[0]),
                )
    src_sql, src_params = ("AND source = ?", [source]) if source else ("", [])
    kind_sql, kind_params = (f"AND {KIND_SQL} = ?", [kind]) if kind else ("", [])
    row = con.execute(
        f"SELECT run_id FROM runs WHERE {_NOT_CONTROL} {src_sql} {kind_sql} "
        "ORDER BY started_at DESC, run_id DESC LIMIT 1 OFFSET ?",
        [*src_params, *kind_params, back],
    ).fetchone()
    return None if row is None else str(row[0])


def resolve_run(
    con: duckdb.DuckDBPyConnection,
    ref: str = "latest",
    source: str | None = None,
    kind: str | None = None,
    *,
    max_error_share: float | None = None,
) -> str:
    """A run id from a reference: `latest` (the newest run that is not a red-team control; right after
    `make evals`, its kit run), `previous` (latest's baseline: the run before it of the same source, kind and
    agent), `latest~N`, a run id or its unique prefix, a git sha (prefix) or a model id (its latest run).
    `kind` (golden, redteam) narrows `latest` and `previous` to runs of that kind. A control run is never
    `latest` or `previous`; name it by its id, and an outage never `previous` (`max_error_share`: more
    errored attempts than this share make one; default MAX_ERROR_SHARE)."""
    src_sql, src_params = ("AND source = ?", [source]) if source else ("", [])
    m = re.fullmatch(r"latest(?:~(\d+))?|previous", ref)
    if m:
        back = 0 if ref == "previous" else int(m.group(1) or 0)
        found = _latest(con, source, back, kind)
        if found is not None and ref == "previous":
            found = baseline_run(con, found, MAX_ERROR_SHARE if max_error_share is None else max_error_share)
            if found is None:
                raise RunNotFound(
                    "no run 'previous' in the store: latest has no earlier complete run of the same source, kind "
                    "and agent"
                )
        if found is None:
            raise RunNotFound(f"no run {ref!r} in the store" + (f" for source {source!r}" if source else ""))
        return found
    for column, op in (("run_id", "="), ("run_id", "prefix"), ("git_sha", "prefix"), ("model", "=")):
        cond = f"{column} = ?" if op == "=" else f"starts_with({column}, ?)"
        found_rows = con.execute(
            f"SELECT run_id FROM runs WHERE {cond} {src_sql} ORDER BY started_at DESC, run_id DESC",
            [ref, *src_params],
        ).fetchall()
        if column == "run_id" and op == "prefix" and len(found_rows) > 1:
            raise RunNotFound(f"run reference {ref!r} is ambiguous: {', '.join(r[0] for r in found_rows[:5])}")
        if found_rows:
            return str(found_rows[0][0])
    raise RunNotFound(f"no run matches {ref!r} (not a run id, git sha or model id in the store)")


def evals_runs(con: duckdb.DuckDBPyConnection, evals_id: str) -> list[str]:
    """The runs one `make evals` wrote (its evals id), oldest first, controls included."""
    rows = con.execute("SELECT run_id FROM runs WHERE evals_id = ? ORDER BY started_at, run_id", [evals_id]).fetchall()
    return [str(r[0]) for r in rows]


def latest_gated(con: duckdb.DuckDBPyConnection, source: str | None = None) -> str | None:
    """The run that stands for the newest `make evals` (the newest evals id among runs that are not
    controls): its kit run, else its first golden eval, else its first run (of `source` when given). None
    when no run in the store was written by `make evals`. Ad-hoc runs written since do not move it."""
    src_sql, src_params = ("AND source = ?", [source]) if source else ("", [])
    row = con.execute(
        f"SELECT evals_id FROM runs WHERE evals_id IS NOT NULL AND {_NOT_CONTROL} {src_sql} "
        "ORDER BY started_at DESC, run_id DESC LIMIT 1",
        src_params,
    ).fetchone()
    if row is None:
        return None
    info = [run_info(con, r) for r in evals_runs(con, str(row[0]))]
    mine = [r for r in info if not is_control(r) and (source is None or r["source"] == source)]
    if not mine:
        return None
    chosen = next((r for r in mine if r["source"] == "kit"), next((r for r in mine if r["kind"] == "golden"), mine[0]))
    return str(chosen["run_id"])


def run_info(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    rows = _rows(con, f"SELECT * EXCLUDE (meta, kind, rules), {KIND_SQL} AS kind FROM runs WHERE run_id = ?", [run_id])
    if not rows:
        raise RunNotFound(f"no run {run_id!r}")
    return rows[0]


def recent_runs(con: duckdb.DuckDBPyConnection, limit: int = 20, source: str | None = None) -> list[dict[str, Any]]:
    """The latest runs, oldest first, with their case-run pass rate."""
    src = "WHERE r.source = ?" if source else ""
    return _rows(
        con,
        f"""SELECT * FROM (
              SELECT r.run_id, r.source, r.started_at, r.model, r.git_sha, r.status,
                     count(c.run_id) AS runs, count_if(c.passed) AS passed,
                     count_if(c.passed) / nullif(count(c.run_id), 0) AS pass_rate
              FROM runs r LEFT JOIN case_results c USING (run_id) {src}
              GROUP BY ALL ORDER BY r.started_at DESC, r.run_id DESC LIMIT ?)
            ORDER BY started_at, run_id""",
        [*([source] if source else []), limit],
    )


def case_table(con: duckdb.DuckDBPyConnection, run_id: str, k: int) -> list[dict[str, Any]]:
    """Per case: runs n, passed c, errors, pass fraction, pass^k (NULL where k > n), flaky."""
    install_macros(con)
    return _rows(
        con,
        """SELECT case_id, n, c, errors, c / n AS pass_fraction, pass_hat_k(c, n, ?) AS pass_hat_k,
                  (c > 0 AND c < n) AS flaky
           FROM (SELECT case_id, count(*) AS n, count_if(passed) AS c,
                        count_if(outcome = 'error' OR error IS NOT NULL) AS errors
                 FROM case_results WHERE run_id = ? GROUP BY case_id)
           ORDER BY pass_fraction, case_id""",
        [k, run_id],
    )


def suite_pass_hat_k(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[int, float]:
    """Suite-level pass^k for k = 1..min n: the mean over cases (kit.aggregate.summarize's definition)."""
    install_macros(con)
    rows = con.execute(
        """WITH per AS (SELECT case_id, count(*) AS n, count_if(passed) AS c FROM case_results
                        WHERE run_id = ? GROUP BY case_id)
           SELECT k, avg(pass_hat_k(c, n, k)) FROM per, range(1, (SELECT min(n) FROM per) + 1) t(k)
           GROUP BY k ORDER BY k""",
        [run_id],
    ).fetchall()
    return {int(k): float(v) for k, v in rows}


def failing_checks(con: duckdb.DuckDBPyConnection, run_id: str, gate: str = "hard") -> list[dict[str, Any]]:
    """Per case and check: how many attempts it failed (or errored) and the first reason given."""
    return _rows(
        con,
        """SELECT case_id, "check", outcome, count(*) AS times, first(reason ORDER BY attempt) AS reason
           FROM check_results WHERE run_id = ? AND gate = ? AND outcome IN ('fail', 'error')
           GROUP BY ALL ORDER BY case_id, "check", outcome""",
        [run_id, gate],
    )


def soft_gates(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """Per soft check: counts by outcome, mean score, and the pass rate over the verdicts that were given
    (skipped is shown apart: it is never a pass, and the gate's policy decides what it means)."""
    return _rows(
        con,
        """SELECT "check", count(*) AS n, count_if(outcome = 'pass') AS passed, count_if(outcome = 'fail') AS failed,
                  count_if(outcome = 'skipped') AS skipped, count_if(outcome = 'error') AS errors,
                  avg(score) AS mean_score, min(threshold) AS threshold,
                  count_if(outcome = 'pass') / nullif(count_if(outcome <> 'skipped'), 0) AS pass_rate
           FROM check_results WHERE run_id = ? AND gate = 'soft' GROUP BY "check" ORDER BY "check" """,
        [run_id],
    )


def totals(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, Any]:
    rows = _rows(
        con,
        """SELECT count(DISTINCT case_id) AS cases, count(*) AS runs, coalesce(count_if(passed), 0) AS passed,
                  coalesce(count_if(outcome = 'error' OR error IS NOT NULL), 0) AS errors,
                  count_if(passed) / nullif(count(*), 0) AS pass_rate,
                  sum(cost_usd) AS cost_usd, sum(tokens) AS tokens
           FROM case_results WHERE run_id = ?""",
        [run_id],
    )
    return rows[0]


@dataclass
class Flip:
    case_id: str
    before: float  # pass fraction in A
    after: float  # pass fraction in B
    checks: list[str] = field(default_factory=list)  # the hard checks that caused it


@dataclass
class Comparison:
    a: str
    b: str
    pass_to_fail: list[Flip]
    fail_to_pass: list[Flip]
    changes: list[Flip]  # every case in both runs, with its pass-fraction change
    only_a: list[str]
    only_b: list[str]


def compare(con: duckdb.DuckDBPyConnection, a: str, b: str) -> Comparison:
    """Cases that flipped between run A and run B; a case passes a run when all its attempts passed."""
    from kit.aggregate import flips

    per = _rows(
        con,
        """SELECT run_id, case_id, count_if(passed) / count(*) AS frac, bool_and(passed) AS ok
           FROM case_results WHERE run_id IN (?, ?) GROUP BY ALL""",
        [a, b],
    )
    fa = {r["case_id"]: r for r in per if r["run_id"] == a}
    fb = {r["case_id"]: r for r in per if r["run_id"] == b}
    failed = _rows(
        con,
        """SELECT run_id, case_id, list(DISTINCT "check" ORDER BY "check") AS checks FROM check_results
           WHERE run_id IN (?, ?) AND gate = 'hard' AND outcome IN ('fail', 'error') GROUP BY ALL""",
        [a, b],
    )
    bad = {(r["run_id"], r["case_id"]): set(r["checks"]) for r in failed}
    flipped = flips({c: r["ok"] for c, r in fa.items()}, {c: r["ok"] for c, r in fb.items()})

    def flip(case_id: str, culprit_run: str, other_run: str) -> Flip:
        # The checks failing in the failing side and not in the passing side caused the flip.
        culprits = bad.get((culprit_run, case_id), set()) - bad.get((other_run, case_id), set())
        return Flip(case_id, fa[case_id]["frac"], fb[case_id]["frac"], sorted(culprits))

    common = sorted(fa.keys() & fb.keys())
    return Comparison(
        a=a,
        b=b,
        pass_to_fail=[flip(c, b, a) for c in flipped["pass_to_fail"]],
        fail_to_pass=[flip(c, a, b) for c in flipped["fail_to_pass"]],
        changes=[Flip(c, fa[c]["frac"], fb[c]["frac"]) for c in common],
        only_a=sorted(fa.keys() - fb.keys()),
        only_b=sorted(fb.keys() - fa.keys()),
    )


def is_control(run: dict[str, Any]) -> bool:
    """A deliberately vulnerable target (kind `control`; before kinds were recorded, a model or agent
    labelled `control-…`): it must fail, which its own stage checks, so it is shown apart, never gated and
    never a baseline."""
    if run.get("kind"):
        return run["kind"] == "control"
    return str(run.get("model") or "").startswith("control-") or str(run.get("agent") or "").startswith("control-")


# A run with more than this share of its attempts errored (an outage: the agent or its provider down) is
# never picked as a baseline: against it every case would look like an improvement. gates.yaml's
# `baseline.max_error_share` (kit.gate.policy) has the same default.
MAX_ERROR_SHARE = 0.5


def _outage_sql(alias: str, max_error_share: float) -> str:
    """SQL true when the run `alias` errored on every attempt, or on more than the share given."""
    share = float(max_error_share)
    return f"""EXISTS (SELECT 1 FROM case_results e WHERE e.run_id = {alias}.run_id GROUP BY e.run_id
                       HAVING count_if(e.outcome = 'error' OR e.error IS NOT NULL) = count(*)
                           OR count_if(e.outcome = 'error' OR e.error IS NOT NULL) > {share!r} * count(*))"""


def baseline_run(con: duckdb.DuckDBPyConnection, run_id: str, max_error_share: float = MAX_ERROR_SHARE) -> str | None:
    """The run a run is compared with (`kit report`'s comparison, `make evals`' flips and gate): the latest
    earlier complete run of the same source, kind and agent (a golden eval is never compared with a red
    team), never a control, never an outage (every attempt errored, or more than `max_error_share` of them).
    A run of a `make evals` (it carries an evals id) is compared with a run of an earlier `make evals` only,
    never with an ad-hoc run (`npx promptfoo eval`, a `kit run --replay` typed by hand).
    The model may differ: what flipped between models is exactly the question."""
    choice = baseline_choice(con, run_id, max_error_share)
    return choice.run_id


@dataclass(frozen=True)
class BaselineChoice:
    """The baseline picked for a run, and the newer candidates passed over as outages (run id, errored
    attempts, attempts), so the gate can say which run it compared against and why."""

    run_id: str | None
    outages: tuple[tuple[str, int, int], ...] = ()


def baseline_choice(
    con: duckdb.DuckDBPyConnection, run_id: str, max_error_share: float = MAX_ERROR_SHARE
) -> BaselineChoice:
    """`baseline_run` with the outages it passed over on the way."""
    p_kind, r_kind = kind_sql("p"), kind_sql("r")
    rows = con.execute(
        f"""SELECT p.run_id, {_outage_sql("p", max_error_share)} AS outage,
                  (SELECT count_if(e.outcome = 'error' OR e.error IS NOT NULL) FROM case_results e
                   WHERE e.run_id = p.run_id) AS errored,
                  (SELECT count(*) FROM case_results e WHERE e.run_id = p.run_id) AS attempts
           FROM runs p, runs r
           WHERE r.run_id = ? AND p.source = r.source AND coalesce(p.agent, '') = coalesce(r.agent, '')
             AND {p_kind} = {r_kind} AND {p_kind} <> 'control'
             AND (p.started_at, p.run_id) < (r.started_at, r.run_id)
             AND coalesce(p.status, 'complete') = 'complete'
             AND (r.evals_id IS NULL OR p.evals_id IS NOT NULL)
           ORDER BY p.started_at DESC, p.run_id DESC""",
        [run_id],
    ).fetchall()
    outages: list[tuple[str, int, int]] = []
    for rid, outage, errored, attempts in rows:
        if not outage:
            return BaselineChoice(str(rid), tuple(outages))
        outages.append((str(rid), int(errored or 0), int(attempts or 0)))
    return BaselineChoice(None, tuple(outages))


def error_share(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple[int, int]:
    """(errored attempts, attempts) of a run."""
    row = con.execute(
        "SELECT count_if(outcome = 'error' OR error IS NOT NULL), count(*) FROM case_results WHERE run_id = ?",
        [run_id],
    ).fetchone()
    return (int(row[0] or 0), int(row[1] or 0)) if row else (0, 0)


def run_rules_json(con: duckdb.DuckDBPyConnection, run_id: str) -> str | None:
    """The rules a run recorded (kit.gate.rules.RunRules as JSON text), None for a run stored without them."""
    row = con.execute("SELECT rules FROM runs WHERE run_id = ?", [run_id]).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def run_ids(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()}


def runs_since(con: duckdb.DuckDBPyConnection, before: set[str]) -> list[dict[str, Any]]:
    """The runs not in `before` (the runs one invocation wrote), oldest first, with case-run counts.
    Merged shards keep their own, earlier, start times, hence a set rather than a time."""
    return _rows(
        con,
        f"""SELECT r.run_id, r.source, {kind_sql("r")} AS kind, {STAGE_SQL} AS stage, r.status, r.agent,
                  r.model, r.started_at,
                  count(c.run_id) AS runs, count_if(c.passed) AS passed, count(DISTINCT c.case_id) AS cases
           FROM runs r LEFT JOIN case_results c USING (run_id)
           WHERE r.run_id NOT IN (SELECT unnest(?::VARCHAR[])) GROUP BY ALL ORDER BY r.started_at, r.run_id""",
        [sorted(before)],
    )


def gate_counts(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    """Check results per stage (`source`: the source, with its kind unless golden), gate and outcome."""
    return _rows(
        con,
        f"""SELECT {STAGE_SQL} AS source, k.gate, k.outcome, count(*) AS n
           FROM check_results k JOIN runs r USING (run_id)
           WHERE k.run_id IN (SELECT unnest(?::VARCHAR[])) GROUP BY ALL ORDER BY ALL""",
        [run_ids],
    )


def case_matrix(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> dict[str, dict[str, tuple[int, int]]]:
    """case id -> source -> (passed, runs) over several runs; red-team cases left out (their own stage)."""
    rows = _rows(
        con,
        f"""SELECT c.case_id, {STAGE_SQL} AS src, count(*) AS n, count_if(c.passed) AS c
           FROM case_results c JOIN runs r USING (run_id)
           WHERE c.run_id IN (SELECT unnest(?::VARCHAR[])) AND NOT starts_with(c.case_id, 'redteam/')
           GROUP BY ALL""",
        [run_ids],
    )
    out: dict[str, dict[str, tuple[int, int]]] = {}
    for r in rows:
        out.setdefault(r["case_id"], {})[r["src"]] = (r["c"], r["n"])
    return out


def failing_checks_of_runs(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    """Failing and erroring checks (both gates) over several runs, per source, case and check."""
    return _rows(
        con,
        f"""SELECT {STAGE_SQL} AS source, k.case_id, k."check", k.gate, k.outcome, any_value(k.reason) AS reason,
                  count(*) AS n
           FROM check_results k JOIN runs r USING (run_id)
           WHERE k.run_id IN (SELECT unnest(?::VARCHAR[])) AND k.outcome IN ('fail', 'error')
           GROUP BY ALL ORDER BY source, k.case_id, k."check" """,
        [run_ids],
    )


def case_runs(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """Every case run of a run, with its outcome and latency (what JUnit lists as testcases)."""
    return _rows(
        con,
        """SELECT case_id, attempt, passed, outcome, error, latency_ms FROM case_results
           WHERE run_id = ? ORDER BY case_id, attempt""",
        [run_id],
    )


def recorded_runs(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    """Every case run of these runs as kit.runner.recorded keeps it: case id, attempt, the trace (JSON
    text) or the error, and `skipped` (a skipped run's reason), in case and attempt order."""
    return _rows(
        con,
        """SELECT case_id, attempt, trace, error, outcome FROM case_results
           WHERE run_id IN (SELECT unnest(?::VARCHAR[])) ORDER BY case_id, attempt""",
        [run_ids],
    )


def unpassed_checks(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """Every check result of a run that is not a pass (fail, error, skipped), both gates."""
    return _rows(
        con,
        """SELECT case_id, attempt, "check", gate, outcome, reason FROM check_results
           WHERE run_id = ? AND outcome <> 'pass' ORDER BY case_id, attempt, "check" """,
        [run_id],
    )


def check_tally(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    """Per check and gate over several runs: how many cases ran it and how many failed or errored it, in
    which sources, with the first reason given; red-team attacks (`redteam/...` cases) counted apart.
    Only checks that failed somewhere, the most failed cases first."""
    return _rows(
        con,
        f"""SELECT k."check", k.gate, starts_with(k.case_id, 'redteam/') AS redteam,
                  count(DISTINCT k.case_id) AS cases,
                  count(DISTINCT k.case_id) FILTER (WHERE k.outcome IN ('fail', 'error')) AS failed,
                  count(DISTINCT k.case_id) FILTER (WHERE k.outcome = 'error') AS errored,
                  list(DISTINCT {STAGE_SQL} ORDER BY {STAGE_SQL})
                    FILTER (WHERE k.outcome IN ('fail', 'error')) AS sources,
                  first(k.reason ORDER BY k.case_id, k.attempt)
                    FILTER (WHERE k.outcome IN ('fail', 'error') AND coalesce(k.reason, '') <> '') AS reason
           FROM check_results k JOIN runs r USING (run_id)
           WHERE k.run_id IN (SELECT unnest(?::VARCHAR[]))
           GROUP BY ALL HAVING failed > 0
           ORDER BY failed DESC, failed / cases DESC, k."check" """,
        [run_ids],
    )


def case_counts(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, tuple[int, int]]:
    """Per case of a run: (passed, attempts), what the gate's floors and significance tests read."""
    rows = con.execute(
        "SELECT case_id, count_if(passed), count(*) FROM case_results WHERE run_id = ? GROUP BY case_id",
        [run_id],
    ).fetchall()
    return {str(r[0]): (int(r[1]), int(r[2])) for r in rows}


def judge_usage(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    """Per run: judge calls, tokens and cost, as the endpoints reported them (`reported`: how many calls
    reported usage at all; a sum is NULL when no call reported it). Runs without judge calls are left out."""
    return _rows(
        con,
        """SELECT run_id, count(*) AS calls, count(prompt_tokens) AS reported,
                  sum(prompt_tokens) AS prompt_tokens, sum(completion_tokens) AS completion_tokens,
                  sum(cost_usd) AS cost_usd
           FROM judge_calls WHERE run_id IN (SELECT unnest(?::VARCHAR[]))
           GROUP BY run_id ORDER BY run_id""",
        [run_ids],
    )


def soft_gate_judges(con: duckdb.DuckDBPyConnection, run_id: str) -> dict[str, dict[str, Any]]:
    """Per soft check of a run: the rubric hash and judge model its verdicts came from (the last call's),
    and how many judge samples made each verdict (`samples`, the most of any verdict)."""
    rows = _rows(
        con,
        """SELECT "check", last(rubric_hash ORDER BY recorded_at) AS rubric_hash,
                  last(judge_model ORDER BY recorded_at) FILTER (WHERE judge_model IS NOT NULL) AS judge_model,
                  max(coalesce(sample, 0)) + 1 AS samples
           FROM judge_calls WHERE run_id = ? GROUP BY "check" """,
        [run_id],
    )
    return {r["check"]: r for r in rows}


def latest_calibrations(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    """Per rubric (by its soft check's name, `rubric:<name>`): its most recent calibration, whatever rubric
    version and judge it measured (the caller tells whether it still applies)."""
    rows = _rows(
        con,
        """SELECT 'rubric:' || rubric AS "check", rubric, rubric_hash, judge_model, samples, n, agreement, kappa,
                  consistency, calibrated_at, calibration_id, labels_file
           FROM calibrations QUALIFY row_number() OVER (PARTITION BY rubric ORDER BY calibrated_at DESC) = 1""",
    )
    return {r["check"]: r for r in rows}


def judged_answers(con: duckdb.DuckDBPyConnection, run_id: str) -> list[dict[str, Any]]:
    """The answers a run's rubrics judged (a verdict given: pass or fail), with the run's trace: what a
    person labels after `kit calibrate --export`."""
    return _rows(
        con,
        """SELECT k.case_id, k.attempt, k."check", c.trace
           FROM check_results k JOIN case_results c USING (run_id, case_id, attempt)
           WHERE k.run_id = ? AND k.gate = 'soft' AND starts_with(k."check", 'rubric:')
                 AND k.outcome IN ('pass', 'fail')
           ORDER BY k.case_id, k.attempt, k."check" """,
        [run_id],
    )


def run_costs(con: duckdb.DuckDBPyConnection, run_ids: list[str]) -> list[dict[str, Any]]:
    """What each run cost, in run order: its case runs, the calls made to the agent (rate-limit retries
    included) and the retries, tokens and cost summed over the traces that carry them (`tokens_runs`,
    `cost_runs`: how many do; None when none does, never a zero nobody measured), and the seconds spent
    waiting on the agent beside the kit's own seconds (reading traces, every check), summed over the case
    runs (calls run at once, so the agent's seconds may exceed the wall time). Calls and seconds are None
    for a run whose results did not come through a runner that times its calls. `replayed`: the case runs
    whose model calls were answered from recordings (kit.recording; their stored cost is 0)."""
    return _rows(
        con,
        """SELECT c.run_id, any_value(r.source) AS source, count(*) AS runs,
                  sum(c.agent_calls) AS agent_calls, sum(c.retries) AS retries,
                  sum(c.tokens) FILTER (WHERE c.tokens > 0) AS tokens, count_if(c.tokens > 0) AS tokens_runs,
                  sum(c.cost_usd) FILTER (WHERE c.cost_usd > 0) AS cost_usd, count_if(c.cost_usd > 0) AS cost_runs,
                  sum(c.agent_s) AS agent_s, sum(c.kit_s) AS kit_s,
                  count_if(json_exists(c.trace, '$.replayed')) AS replayed
           FROM case_results c JOIN runs r USING (run_id)
           WHERE c.run_id IN (SELECT unnest(?::VARCHAR[]))
           GROUP BY c.run_id ORDER BY min(r.started_at), c.run_id""",
        [run_ids],
    )
