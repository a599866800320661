"""The end_state check: SQL over the sandbox's tables after the run, in a locked-down DuckDB."""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import re
import threading
from typing import TYPE_CHECKING, Any

from kit.canonical import canonical
from kit.checks import limits
from kit.checks.registry import check
from kit.checks.text import short
from kit.result import Verdict

if TYPE_CHECKING:  # hints resolved by the registry when parameters are first parsed
    from kit.checks.params import Sql
    from kit.trace import Trace

# Rows read from a query beyond those expected: enough to show what is wrong, never the whole of a runaway.
MAX_ROWS = 10_000
# Rows loaded per INSERT statement: loading a table takes the memory of one batch, not of the whole table.
INSERT_BATCH = 8192

# The integers a HUGEINT column holds; a larger one is a load error.
_INT64 = range(-(2**63), 2**63)
_INT128 = range(-(2**127), 2**127)

ATTACH_HINT = "attach the tables with `kit import --end-state FILE` or a top-level `end_state` in the trace"


class EndStateError(ValueError):
    """The trace's end state cannot answer the query: a table is missing, or its rows do not load."""


def _column_type(values: list[Any]) -> str:
    present = [v for v in values if v is not None]
    if not present:
        return "VARCHAR"
    if all(isinstance(v, bool) for v in present):
        return "BOOLEAN"
    if all(isinstance(v, int) and not isinstance(v, bool) for v in present):
        return "BIGINT" if all(v in _INT64 for v in present) else "HUGEINT"
    if all(isinstance(v, int | float) and not isinstance(v, bool) for v in present):
        return "DOUBLE"
    if all(isinstance(v, str) for v in present):
        return "VARCHAR"
    return "JSON"


def _declared_columns(table: str, declared: Any) -> dict[str, str | None]:
    """A table's declared columns in order, each with its type (None: inferred from the values), or
    EndStateError naming what is wrong: the type goes into the sandbox's CREATE TABLE, so only the plain
    types a JSON value loads into are taken."""
    if declared is None:
        return {}
    if isinstance(declared, list) and all(isinstance(c, str) for c in declared):
        return dict.fromkeys(declared)
    if not isinstance(declared, dict):
        raise EndStateError(f"end_state_columns of table {table!r}: expected a list of names or {{column: type}}")
    from kit.importers.end_state import COLUMN_TYPE

    out: dict[str, str | None] = {}
    for column, kind in declared.items():
        if kind is not None and not (isinstance(kind, str) and COLUMN_TYPE.fullmatch(kind)):
            raise EndStateError(
                f"end_state_columns: table {table!r} column {column!r}: type {kind!r} is not one the sandbox "
                "takes (BOOLEAN, the integer types, FLOAT, DOUBLE, DECIMAL(p,s), VARCHAR, DATE, TIME, "
                "TIMESTAMP, TIMESTAMP WITH TIME ZONE, UUID, JSON, or null to infer it)"
            )
        out[str(column)] = kind
    return out


def _content_key(rows: list[dict[str, Any]], columns: Any) -> bytes:
    # Column order matters to `SELECT *`, so the key keeps key order (unlike `canonical`).
    import hashlib  # only traces with an end state need it

    text = json.dumps([columns, rows], default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).digest()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


# Functions whose result differs between two runs of one query on the same rows.
_VOLATILE = re.compile(
    r"random|uuid|now\b|current_|today|localtime|transaction_timestamp|nextval|currval|setseed|get_current", re.I
)
_ANSWERS_KEPT = 512
_ROWS_KEPT = 100


class _Sandbox:
    """One locked-down in-memory DuckDB per process, holding one trace's end-state tables at a time.

    Opening a DuckDB database costs ~15 ms and loading a trace's tables ~1 ms, so the database is shared and
    the tables are swapped in under a lock: while a query runs, the only tables that exist are its own
    trace's. Every door to the outside is shut (no files, no network, no extensions, no persistent
    secrets, and no temp folder: DuckDB lets a query read its temp folder even with external access off, and
    its default is `.tmp` in the working directory) and the configuration is locked, and queries are SELECTs
    (checked at load), so a query cannot change what the next one sees.

    A table whose rows fail to load is dropped, never kept empty under its content key: every query on
    that trace is an error, not a pass on an empty table.

    A query's rows are kept for the tables' contents they were read from: most runs of an attack or a case
    leave the same end state, so its checks' queries (~1 ms each, several per run) are asked once. Queries
    whose answer can change on the same rows (random(), now(), sequences) are always run.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.con: Any = None
        self.loaded: object | None = None
        self.tables: dict[str, bytes] = {}  # loaded table -> content key of its rows
        self.contents: tuple[tuple[str, bytes], ...] = ()  # the loaded tables' keys: what an answer was read from
        self.answers: dict[tuple[Any, ...], list[tuple[Any, ...]]] = {}  # (contents, sql, max) -> rows

    def _connect(self) -> Any:
        from kit import duck

        con = duck.connect(
            config={
                "enable_external_access": False,
                "allow_persistent_secrets": False,
                "temp_directory": "",
                # A runaway query (a huge cross join, an unbounded recursive CTE) fails, not the machine.
                "memory_limit": "1GB",
                # End states are a few rows: scheduling a query over several threads costs more (~20%)
                # than it saves, and the checks' callers run in parallel already.
                "threads": 1,
            },
        )
        con.execute("SET lock_configuration = true")
        return con

    def _load(self, trace: Trace) -> None:
        """Make the database hold exactly this trace's tables. A table whose rows are the same as those
        already loaded (most of a sandbox does not change between runs) is kept, not rebuilt."""
        # Columns travel beside the rows (`end_state_columns`: a list of names, or names with their types), so a
        # table with no rows keeps its columns, and a column its type.
        declared: dict[str, Any] = (trace.model_extra or {}).get("end_state_columns") or {}
        if not isinstance(declared, dict):
            raise EndStateError("end_state_columns must map each table to its columns")
        wanted = {table: _content_key(rows, declared.get(table)) for table, rows in trace.end_state.items()}
        for table, key in list(self.tables.items()):
            if wanted.get(table) != key:
                self.con.execute(f"DROP TABLE {_quote(table)}")
                del self.tables[table]
        for table, rows in trace.end_state.items():
            if table in self.tables:
                continue
            typed = _declared_columns(table, declared.get(table))
            columns: list[str] = list(typed)
            for row in rows:
                columns.extend(k for k in row if k not in columns)
            if not columns:
                columns = ["_empty"]  # a table with no rows and no known columns still exists (count(*) = 0)
            types = [typed.get(c) or _column_type([r.get(c) for r in rows]) for c in columns]
            name = _quote(table)
            cols = ", ".join(f"{_quote(c)} {t}" for c, t in zip(columns, types, strict=True))
            self.con.execute(f"CREATE TABLE {name} ({cols})")
            try:
                self._insert(name, columns, types, rows)
            except Exception as e:
                self.con.execute(f"DROP TABLE {name}")
                first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                raise EndStateError(f"end_state table {table!r} does not load: {first}") from None
            self.tables[table] = wanted[table]
        self.contents = tuple(sorted(self.tables.items()))

    def _insert(self, name: str, columns: list[str], types: list[str], rows: list[dict[str, Any]]) -> None:
        """The rows, INSERT_BATCH at a time, each column as one list (`INSERT ... SELECT unnest(?), ...`): one
        VALUES statement of every row made DuckDB parse and plan a list as long as the table (1.2 GB and 16 s
        for 100,000 rows of 8 MB). A batch DuckDB cannot take as lists (a column of mixed kinds) is inserted
        row by row in one VALUES statement, where each value is cast alone, as before."""
        import duckdb

        json_columns = {c for c, t in zip(columns, types, strict=True) if t == "JSON"}
        as_lists = f"INSERT INTO {name} SELECT " + ", ".join("unnest(?)" for _ in columns)
        row_marks = "(" + ", ".join("?" for _ in columns) + ")"
        for start in range(0, len(rows), INSERT_BATCH):
            part = rows[start : start + INSERT_BATCH]
            lists = [
                [canonical(v) if c in json_columns and v is not None else v for v in (r.get(c) for r in part)]
                for c in columns
            ]
            try:
                self.con.execute(as_lists, lists)
            except duckdb.Error:
                values = [v for row in zip(*lists, strict=True) for v in row]
                self.con.execute(f"INSERT INTO {name} VALUES " + ", ".join(row_marks for _ in part), values)

    def query(self, trace: Trace, sql: str, max_rows: int) -> list[tuple[Any, ...]]:
        """At most `max_rows` + 1 rows of the query; TimeoutError when it runs past the check time limit."""
        import duckdb

        from kit.checks.params import refused_sql

        refused = refused_sql(sql)  # refused at load too; here for any caller that skipped the parameters
        if refused is not None:
            raise EndStateError(refused)
        with self.lock:
            if self.con is None:
                self.con, self.loaded, self.tables = self._connect(), None, {}
            token = trace.derived.setdefault("end_state_token", object())
            if self.loaded is not token:
                self.loaded = None
                self._load(trace)
                self.loaded = token
            watch = limits.watched_query(self.con)
            try:
                with watch:
                    # Rows stream: a query that would return billions is read no further than needed.
                    return self._answer(sql, max_rows)
            except duckdb.CatalogException as e:
                self._missing_tables(trace, sql, str(e))
                raise
            except (duckdb.Error, RuntimeError):
                if watch.interrupted:
                    raise TimeoutError(f"query ran longer than {limits.CHECK_TIMEOUT:g} s and was stopped") from None
                raise

    def _answer(self, sql: str, max_rows: int) -> list[tuple[Any, ...]]:
        if _VOLATILE.search(sql):
            return self.con.execute(sql).fetchmany(max_rows + 1)
        key = (self.contents, sql, max_rows)
        rows = self.answers.get(key)
        if rows is None:
            rows = self.con.execute(sql).fetchmany(max_rows + 1)
            if len(rows) <= _ROWS_KEPT:  # a check's answer is a few rows; a large one is not worth the memory
                if len(self.answers) >= _ANSWERS_KEPT:
                    del self.answers[next(iter(self.answers))]  # the oldest
                self.answers[key] = rows
        return list(rows)

    def _missing_tables(self, trace: Trace, sql: str, error: str) -> None:
        """EndStateError naming the tables the query reads that the trace's end state lacks, if any."""
        try:
            named = set(self.con.get_table_names(sql))
        except Exception:  # it binds the query, and fails where the query failed: read DuckDB's words
            named = set(re.findall(r"Table with name (.+?) does not exist", error))
        have = {t.casefold() for t in trace.end_state}
        missing = sorted(t for t in named if t.casefold() not in have)
        if not missing:
            return
        tables = ", ".join(repr(t) for t in missing)
        has = ", ".join(repr(t) for t in sorted(trace.end_state)) or "no table"
        noun = "table" if len(missing) == 1 else "tables"
        raise EndStateError(f"{noun} {tables} not in this trace's end state (it has {has}): {ATTACH_HINT}")


_SANDBOX = _Sandbox()
_INHERITED: list[_Sandbox] = []


def _after_fork_in_child() -> None:
    # The parent's connection and lock are unusable in a forked child (DuckDB's threads do not survive fork).
    # The old one stays referenced, never closed: closing it could wait on threads only the parent has.
    global _SANDBOX
    _INHERITED.append(_SANDBOX)
    _SANDBOX = _Sandbox()


os.register_at_fork(after_in_child=_after_fork_in_child)


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
    *,
    query: Sql,
    expected: list[list[Any]] | None = None,
    empty: bool = False,
    ordered: bool = False,
) -> Verdict:
    """Passes when the query's rows over the end-state tables equal `expected` (or, with `empty`, there are none).

    Each table of the trace's `end_state` is a table of that name in a locked-down DuckDB: the query can
    read nothing else (no files, no network) and is stopped at the check time limit. A table the query
    names that the end state lacks is an `error`. Give exactly one of `expected` and `empty: true`.

    Args:
        query: One SQL SELECT statement (anything else is refused at load). Required.
        expected: The rows wanted, a list of rows, each a list of values (compared as canonical JSON).
            Optional: unset by default.
        empty: `true`: the query must return no rows. Default `false`.
        ordered: `true`: the rows must come in the order given; `false`: compared as a multiset. Default
            `false`.
    """
    replayed = (trace.model_extra or {}).get("end_state_replayed")
    if replayed:  # the tools ran from a replayed MCP cassette: their tables were never written (kit.mcp.attempts)
        raise EndStateError(str(replayed))
    cap = MAX_ROWS + (len(expected) if expected else 0)
    rows = [_plain(list(r)) for r in _SANDBOX.query(trace, query.source, cap)]
    many = f"over {cap}" if len(rows) > cap else str(len(rows))
    if empty:
        if not rows:
            return Verdict(True)
        return Verdict(False, f"query returned {many} rows, want none: {short(str(rows[:10]))}")
    assert expected is not None
    if len(rows) > cap:
        return Verdict(False, f"query returned {many} rows, want {len(expected)}: {short(str(rows[:10]), 160)}")
    got_keys = [canonical(r) for r in rows]
    want_keys = [canonical(r) for r in expected]
    if not ordered:
        got_keys.sort()
        want_keys.sort()
    if got_keys == want_keys:
        return Verdict(True)
    return Verdict(False, f"query returned {short(str(rows), 160)}, want {short(str(expected), 160)}")
