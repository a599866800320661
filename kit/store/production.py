"""Production traces in the store (source `production`): `kit serve`'s verdicts, written in batches, and
what the report reads of them.

`production_traces` has one row per OpenTelemetry trace id: a trace already there is never written again
(a late span past the settle time, a batch replayed after a crash), so nothing is judged twice.
`production_checks` has one row per check of each trace. Writes go straight to the DuckDB file under the
store lock, a batch per transaction, so `kit report`, `kit gate` and `make evals` wait at most one batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import duckdb
import orjson

TRACE_COLUMNS = (
    "trace_id",
    "receiver",
    "service",
    "agent",
    "model",
    "started_at",
    "ended_at",
    "judged_at",
    "passed",
    "outcome",
    "error",
    "spans",
    "complete",
    "trace",
)
CHECK_COLUMNS = ("trace_id", "check", "invariant", "outcome", "reason", "judged_at")
_TIMES = ("started_at", "ended_at", "judged_at")


def _typed(name: str) -> str:
    if name in _TIMES:
        return f"to_timestamp(unnest(${{n}}))::TIMESTAMP AS {_q(name)}"
    if name == "trace":
        return f"unnest(${{n}})::JSON AS {_q(name)}"
    return f"unnest(${{n}}) AS {_q(name)}"


def _q(name: str) -> str:
    return f'"{name}"'


def _select(columns: Sequence[str]) -> str:
    parts = [_typed(c).replace("${n}", f"${i + 1}") for i, c in enumerate(columns)]
    return "SELECT " + ", ".join(parts)


def write(con: duckdb.DuckDBPyConnection, traces: list[dict[str, Any]], checks: list[dict[str, Any]]) -> set[str]:
    """Insert the traces not already in the store, and the checks of those; one transaction. Times are
    seconds since the epoch (UTC). Returns the trace ids written (the others were there already)."""
    if not traces:
        return set()
    ids = [t["trace_id"] for t in traces]
    con.execute("BEGIN TRANSACTION")
    try:
        there = {
            r[0]
            for r in con.execute(
                "SELECT trace_id FROM production_traces WHERE trace_id IN (SELECT unnest(?::VARCHAR[]))", [ids]
            ).fetchall()
        }
        seen: set[str] = set()
        new = []
        for t in traces:  # one row per id even if a batch held it twice
            if t["trace_id"] not in there and t["trace_id"] not in seen:
                seen.add(t["trace_id"])
                new.append(t)
        if new:
            cols = [[_cell(c, t.get(c)) for t in new] for c in TRACE_COLUMNS]
            names = ", ".join(_q(c) for c in TRACE_COLUMNS)
            con.execute(f"INSERT INTO production_traces ({names}) {_select(TRACE_COLUMNS)}", cols)
            _insert_checks(con, [c for c in checks if c["trace_id"] in seen])
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return seen


def write_soft(con: duckdb.DuckDBPyConnection, checks: list[dict[str, Any]]) -> int:
    """Soft rubrics' rows (check `rubric:<name>`) of traces already in the store, each (trace, check) once; one
    transaction. Returns the rows written."""
    if not checks:
        return 0
    con.execute("BEGIN TRANSACTION")
    try:
        ids = sorted({c["trace_id"] for c in checks})
        known = {
            r[0]
            for r in con.execute(
                "SELECT trace_id FROM production_traces WHERE trace_id IN (SELECT unnest(?::VARCHAR[]))", [ids]
            ).fetchall()
        }
        there = {
            (t, c)
            for t, c in con.execute(
                """SELECT trace_id, "check" FROM production_checks
                   WHERE trace_id IN (SELECT unnest(?::VARCHAR[])) AND "check" LIKE 'rubric:%'""",
                [ids],
            ).fetchall()
        }
        new = []
        for c in checks:
            key = (c["trace_id"], c["check"])
            if c["trace_id"] in known and key not in there:
                there.add(key)
                new.append(c)
        _insert_checks(con, new)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return len(new)


def _insert_checks(con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]]) -> None:
    """production_checks rows, column by column (inside the caller's transaction)."""
    if rows:
        cols = [[r.get(name) for r in rows] for name in CHECK_COLUMNS]
        names = ", ".join(_q(c) for c in CHECK_COLUMNS)
        con.execute(f"INSERT INTO production_checks ({names}) {_select(CHECK_COLUMNS)}", cols)


def _cell(column: str, value: Any) -> Any:
    if column == "trace" and value is not None and not isinstance(value, str):
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    return value


def judged(con: duckdb.DuckDBPyConnection, trace_ids: Sequence[str]) -> set[str]:
    """Which of these traces the store already holds."""
    if not trace_ids:
        return set()
    rows = con.execute(
        "SELECT trace_id FROM production_traces WHERE trace_id IN (SELECT unnest(?::VARCHAR[]))", [list(trace_ids)]
    ).fetchall()
    return {r[0] for r in rows}


# --- what the report reads ------------------------------------------------------------------------------


def summary(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    row = con.execute(
        """SELECT count(*), count(*) FILTER (WHERE passed), count(*) FILTER (WHERE outcome = 'error'),
                  min(started_at), max(ended_at), count(DISTINCT receiver)
           FROM production_traces"""
    ).fetchone()
    traces, passed, errors, first, last, receivers = row if row else (0, 0, 0, None, None, 0)
    return {
        "traces": traces,
        "passed": passed,
        "errors": errors,
        "first": first,
        "last": last,
        "receivers": receivers,
    }


def pass_rates(con: duckdb.DuckDBPyConnection, bucket: str = "hour") -> list[dict[str, Any]]:
    """Per invariant (a check outside any invariant is its own) and time bucket (of the trace's start):
    traces judged, passed, failed, errors."""
    if bucket not in ("minute", "hour", "day"):
        raise ValueError(f"bucket must be minute, hour or day, not {bucket!r}")
    rows = con.execute(
        f"""SELECT date_trunc('{bucket}', t.started_at) AS bucket_start, coalesce(c.invariant, c."check") AS invariant,
                   count(DISTINCT c.trace_id) AS traces,
                   count(DISTINCT c.trace_id) FILTER (WHERE c.outcome = 'fail') AS failed,
                   count(DISTINCT c.trace_id) FILTER (WHERE c.outcome = 'error') AS errors
            FROM production_checks c JOIN production_traces t USING (trace_id)
            WHERE c."check" NOT LIKE 'rubric:%'
            GROUP BY ALL ORDER BY bucket_start, invariant"""
    ).fetchall()
    out = []
    for at, invariant, traces, failed, errors in rows:
        out.append(
            {
                "at": at,
                "invariant": invariant,
                "traces": traces,
                "failed": failed,
                "errors": errors,
                "pass_rate": (traces - failed - errors) / traces if traces else None,
            }
        )
    return out


def failing(con: duckdb.DuckDBPyConnection, limit: int = 50) -> list[dict[str, Any]]:
    """The newest failing traces, each with every check that did not pass (its reason), newest first."""
    rows = con.execute(
        """SELECT t.trace_id, t.service, t.agent, t.model, t.started_at, t.outcome, t.error,
                  list({'check': c."check", 'invariant': c.invariant, 'outcome': c.outcome, 'reason': c.reason}
                       ORDER BY c."check") FILTER (WHERE c.outcome IS NOT NULL) AS checks
           FROM (SELECT * FROM production_traces WHERE NOT passed ORDER BY started_at DESC NULLS LAST, trace_id
                 LIMIT ?) t
           LEFT JOIN production_checks c ON c.trace_id = t.trace_id AND c.outcome <> 'pass'
                AND c."check" NOT LIKE 'rubric:%'
           GROUP BY ALL ORDER BY t.started_at DESC NULLS LAST, t.trace_id""",
        [limit],
    ).fetchall()
    keys = ("trace_id", "service", "agent", "model", "started_at", "outcome", "error", "checks")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def soft_rates(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Per soft rubric (`kit serve --rubrics`, a sample of the traces): its outcomes counted."""
    rows = con.execute(
        """SELECT "check", count(*) FILTER (WHERE outcome = 'pass'), count(*) FILTER (WHERE outcome = 'fail'),
                  count(*) FILTER (WHERE outcome = 'error'), count(*) FILTER (WHERE outcome = 'skipped'),
                  any_value(reason) FILTER (WHERE outcome = 'skipped')
           FROM production_checks WHERE "check" LIKE 'rubric:%' GROUP BY ALL ORDER BY 1"""
    ).fetchall()
    keys = ("check", "passed", "failed", "errors", "skipped", "skipped_reason")
    return [dict(zip(keys, r, strict=True)) for r in rows]


def has_production(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT count(*) FROM (SELECT 1 FROM production_traces LIMIT 1)").fetchone()
    return bool(row and row[0])
