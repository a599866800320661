"""The end_state check: SQL over the sandbox's tables after the run, in a locked-down DuckDB."""

from __future__ import annotations

import datetime as dt
import decimal
from typing import Any

from kit.canonical import canonical
from kit.case import Case
from kit.checks.params import Sql
from kit.checks.registry import check
from kit.checks.text import short
from kit.result import Result
from kit.trace import Trace


def _column_type(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if not present:
        return "VARCHAR"
    if all(isinstance(v, bool) for v in present):
        return "BOOLEAN"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "BIGINT"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return "DOUBLE"
    if all(isinstance(v, str) for v in present):
        return "VARCHAR"
    return "JSON"


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def end_state_db(trace: Trace) -> Any:
    """One DuckDB connection per trace holding its end-state tables, with every door to the outside shut:
    no files, no network, no extensions, and the settings locked so a query cannot reopen them."""
    con = trace.derived.get("end_state_db")
    if con is not None:
        return con
    import duckdb

    con = duckdb.connect(":memory:")
    for table, rows in trace.end_state.items():
        columns: list[str] = []
        for row in rows:
            for k in row:
                if k not in columns:
                    columns.append(k)
        if not columns:
            columns = ["_empty"]  # a table with no rows and no known columns still exists (count(*) = 0)
        types = [_column_type([r.get(c) for r in rows]) for c in columns]
        con.execute(
            f"CREATE TABLE {_quote(table)} ("
            + ", ".join(f"{_quote(c)} {t}" for c, t in zip(columns, types, strict=True))
            + ")"
        )
        if rows:
            values = [
                [canonical(r.get(c)) if t == "JSON" and r.get(c) is not None else r.get(c)
                 for c, t in zip(columns, types, strict=True)]
                for r in rows
            ]
            marks = ", ".join("?" for _ in columns)
            con.executemany(f"INSERT INTO {_quote(table)} VALUES ({marks})", values)
    con.execute("SET enable_external_access = false")
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    con.execute("SET lock_configuration = true")
    trace.derived["end_state_db"] = con
    return con


def _plain(v: Any) -> Any:
    if isinstance(v, decimal.Decimal):
        return float(v)
    if isinstance(v, dt.date | dt.datetime | dt.time):
        return v.isoformat()
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


def _validate(params: dict[str, Any]) -> None:
    if (params["expected"] is None) == (not params["empty"]):
        raise ValueError("give exactly one of 'expected' (rows) or 'empty: true'")


@check("end_state", validate=_validate)
def end_state(
    trace: Trace,
    case: Case,
    *,
    query: Sql,
    expected: list[list[Any]] | None = None,
    empty: bool = False,
    ordered: bool = False,
) -> Result:
    con = end_state_db(trace).cursor()
    rows = [_plain(list(r)) for r in con.execute(query.source).fetchall()]
    if empty:
        if not rows:
            return Result("end_state", True)
        return Result("end_state", False, f"query returned {len(rows)} rows, want none: {short(str(rows))}")
    assert expected is not None
    got_keys = [canonical(r) for r in rows]
    want_keys = [canonical(r) for r in expected]
    if not ordered:
        got_keys.sort()
        want_keys.sort()
    if got_keys == want_keys:
        return Result("end_state", True)
    return Result("end_state", False, f"query returned {short(str(rows), 160)}, want {short(str(expected), 160)}")
