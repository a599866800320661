"""The tables an agent left behind, as a trace's `end_state` (table -> rows) and `end_state_columns`
(table -> {column: type}), so an empty table keeps its columns and every column its type.

Read from (`read_end_state(path)`, `kit import --end-state FILE`): JSON (`{"table": [{"column": value}, ...]}`),
a SQLite database or a DuckDB database file (told apart by their first bytes). An agent may also hand its
end state as the database it wrote (`end_state_of(value)`): a `sqlite3` or DuckDB connection, or the path of
a database file. A database's tables are read whole and read-only (a file is opened read-only; a connection
only ever runs SELECTs); DuckDB files are opened with extension autoinstall and autoload off, so reading one
never fetches or loads code. Values JSON cannot hold are written as JSON would read them back: decimals as
numbers, times as ISO text, bytes as hex.

Column types are DuckDB's names (`BIGINT`, `DOUBLE`, `VARCHAR`, `DATE`, `DECIMAL(10,2)`, ...). A SQLite
column's type comes from its declared type by SQLite's affinity rules, kept only when every value in it is
of that type (SQLite lets a column hold anything); a type the sandbox cannot hold as JSON values carry it
(a list, a struct, a blob) is left out, and the end_state check then infers it from the values.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.duck import DUCKDB_MAGIC, SQLITE_MAGIC
from kit.errors import KitInputError

# The column types an end state may declare: what JSON values load into without loss of meaning. Anything else
# (nested, blob, interval, enum, ...) is inferred from the values instead.
_SIMPLE_TYPES = (
    "BOOLEAN|TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|FLOAT|DOUBLE|"
    "VARCHAR|DATE|TIME|TIMESTAMP|TIMESTAMP WITH TIME ZONE|UUID|JSON"
)
COLUMN_TYPE = re.compile(rf"(?:{_SIMPLE_TYPES}|DECIMAL\((?:[1-9]|[1-3]\d)(?:,\s?(?:\d|[1-3]\d))?\))")

Rows = list[dict[str, Any]]


@dataclass(frozen=True)
class EndState:
    """Every table's rows and its columns in order, each with its type (None: inferred from the values)."""

    tables: dict[str, Rows] = field(default_factory=dict)
    columns: dict[str, dict[str, str | None]] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        """The trace fields that carry it: `end_state`, and `end_state_columns` when any table has columns."""
        out: dict[str, Any] = {"end_state": self.tables}
        if self.columns:
            out["end_state_columns"] = self.columns
        return out


def read_end_state(path: str | Path) -> EndState:
    """Every table of the file with its rows and columns, or KitInputError naming the file (and the table)."""
    p = Path(path)
    kind = _database_kind(p)
    if kind == "sqlite":
        return _sqlite_file(p)
    if kind == "duckdb":
        return _duckdb_file(p)
    return EndState(_json_tables(p))


def end_state_of(value: Any) -> EndState | None:
    """The end state an agent returned as its database (a sqlite3 or DuckDB connection, or a database file's
    path), read whole; None when `value` is none of these (rows as dicts, read as they are). Raises
    ValueError saying what was returned when it names a file that is not a database."""
    import sqlite3

    if isinstance(value, sqlite3.Connection):
        try:
            return _sqlite(value)
        except sqlite3.Error as e:
            raise ValueError(f"returned an end_state sqlite3 connection that cannot be read: {e}") from None
    if type(value).__module__.partition(".")[0] in ("duckdb", "_duckdb") and hasattr(value, "execute"):
        import duckdb

        try:
            return _duckdb(value)
        except duckdb.Error as e:
            raise ValueError(f"returned an end_state DuckDB connection that cannot be read: {e}") from None
    if isinstance(value, str | os.PathLike):
        p = Path(value)
        try:
            kind = _database_kind(p)
        except KitInputError:
            raise ValueError(f"returned end_state {str(p)!r}, a path to no readable file") from None
        if kind is None:
            raise ValueError(
                f"returned end_state {str(p)!r}, which is not a SQLite or DuckDB database file "
                "(give the tables as rows, a database connection or a database file's path)"
            )
        try:
            return read_end_state(p)
        except KitInputError as e:
            raise ValueError(f"returned end_state {str(p)!r}: {e.message}") from None
    return None


def _database_kind(p: Path) -> str | None:
    try:
        with p.open("rb") as f:
            head = f.read(16)
    except OSError as e:
        raise KitInputError(f"--end-state: cannot read: {e.strerror}", file=str(p)) from None
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head[8:12] == DUCKDB_MAGIC:
        return "duckdb"
    return None


def _json_tables(p: Path) -> dict[str, Rows]:
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise KitInputError(
            f"--end-state: not JSON, SQLite or DuckDB ({e}); expected {{table: [row objects]}} or a database file",
            file=str(p),
        ) from None
    if not isinstance(data, dict):
        raise KitInputError(
            f"--end-state: expected an object of tables ({{table: [row objects]}}), got {type(data).__name__}",
            file=str(p),
        )
    for table, rows in data.items():
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            raise KitInputError(f"--end-state: table {table!r}: expected a list of row objects", file=str(p))
    return data


def _sqlite_file(p: Path) -> EndState:
    import sqlite3

    try:
        con = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise KitInputError(f"--end-state: cannot open the SQLite database: {e}", file=str(p)) from None
    try:
        return _sqlite(con)
    except sqlite3.Error as e:
        raise KitInputError(f"--end-state: cannot read the SQLite database: {e}", file=str(p)) from None
    finally:
        con.close()


def _sqlite(con: Any) -> EndState:
    """Every table of a SQLite connection (SELECTs only), each column typed by its declared affinity."""
    names = [
        r[0]
        for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        )
    ]
    tables: dict[str, Rows] = {}
    columns: dict[str, dict[str, str | None]] = {}
    for name in names:
        declared = {r[1]: str(r[2] or "") for r in con.execute(f"PRAGMA table_info({_quote(name)})")}
        cur = con.execute(f"SELECT * FROM {_quote(name)}")
        cols = [d[0] for d in cur.description]
        raw = cur.fetchall()
        tables[name] = _rows(cols, raw)
        columns[name] = {c: _sqlite_type(declared.get(c, ""), [row[i] for row in raw]) for i, c in enumerate(cols)}
    return EndState(tables, columns)


def _sqlite_type(declared: str, values: list[Any]) -> str | None:
    """SQLite's affinity of a declared type (sqlite.org/datatype3.html, 3.1) as a DuckDB type, when every
    value holds to it; None (inferred from the values) otherwise."""
    t = declared.upper()
    present = [v for v in values if v is not None]
    if "INT" in t:
        duck, ok = "BIGINT", all(isinstance(v, int) and -(2**63) <= v < 2**63 for v in present)
    elif any(w in t for w in ("CHAR", "CLOB", "TEXT")):
        duck, ok = "VARCHAR", all(isinstance(v, str) for v in present)
    elif not t or "BLOB" in t:
        return None
    elif "BOOL" in t and all(v in (0, 1) and not isinstance(v, float) for v in present):
        return "BOOLEAN"  # SQLite keeps a boolean as 0 or 1
    elif any(w in t for w in ("REAL", "FLOA", "DOUB")):
        duck, ok = "DOUBLE", all(isinstance(v, int | float) for v in present)
    elif all(isinstance(v, int) for v in present) and not any(w in t for w in ("DEC", "NUM", "REAL")):
        duck, ok = "BIGINT", all(-(2**63) <= v < 2**63 for v in present)
    else:  # NUMERIC affinity (DECIMAL, NUMERIC, BOOLEAN, DATE, ...): a number, else what the values say
        duck, ok = "DOUBLE", all(isinstance(v, int | float) for v in present)
    return duck if ok else None


def _duckdb_file(p: Path) -> EndState:
    import duckdb

    from kit import duck

    try:
        con = duck.connect(str(p), read_only=True)
    except duckdb.ConnectionException as e:
        if "different configuration" not in str(e):
            raise KitInputError(f"--end-state: cannot open the DuckDB database: {e}", file=str(p)) from None
        con = _held_open(p, e)
    except duckdb.Error as e:
        raise KitInputError(f"--end-state: cannot open the DuckDB database: {e}", file=str(p)) from None
    try:
        return _duckdb(con)
    except duckdb.Error as e:
        raise KitInputError(f"--end-state: cannot read the DuckDB database: {e}", file=str(p)) from None
    finally:
        con.close()


def _held_open(p: Path, refused: Exception) -> Any:
    """A connection to a DuckDB file this process already holds open (an agent handing back the path of the
    database it still has open): DuckDB shares one database per file in a process and refuses a connection of
    another configuration, so it joins the database the holder opened (read-write, else read-only), with the
    holder's settings (no database is opened anew, so nothing is loaded that the holder did not); only SELECTs
    ever run on it. KitInputError when neither is the holder's."""
    import duckdb

    from kit import duck

    for read_only in (False, True):
        try:
            return duck.join_held(str(p), read_only=read_only)
        except duckdb.Error:
            continue
    raise KitInputError(f"--end-state: cannot open the DuckDB database: {refused}", file=str(p)) from None


def _duckdb(con: Any) -> EndState:
    """Every base table of a DuckDB connection (SELECTs only; tables outside `main` as `schema.table`)."""
    found = con.execute(
        "SELECT table_schema, table_name FROM information_schema.tables "
        "WHERE table_type = 'BASE TABLE' AND table_catalog = current_database() "
        "ORDER BY table_schema = 'main' DESC, table_schema, table_name"
    ).fetchall()
    tables: dict[str, Rows] = {}
    columns: dict[str, dict[str, str | None]] = {}
    for schema, name in found:
        key = name if schema == "main" else f"{schema}.{name}"
        cur = con.execute(f"SELECT * FROM {_quote(schema)}.{_quote(name)}")
        cols = [d[0] for d in cur.description]
        tables[key] = _rows(cols, cur.fetchall())
        typed = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_catalog = current_database() AND table_schema = ? AND table_name = ? "
            "ORDER BY ordinal_position",
            [schema, name],
        ).fetchall()
        kinds = {c: str(t) for c, t in typed}
        columns[key] = {c: kinds.get(c) if COLUMN_TYPE.fullmatch(kinds.get(c) or "") else None for c in cols}
    return EndState(tables, columns)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _rows(columns: list[str], rows: list[tuple[Any, ...]]) -> Rows:
    return [{c: _plain(v) for c, v in zip(columns, row, strict=True)} for row in rows]


def _plain(v: Any) -> Any:
    """A database value as JSON holds it."""
    if isinstance(v, decimal.Decimal):
        return int(v) if v == v.to_integral_value() and abs(v) < 2**63 else float(v)
    if isinstance(v, dt.date | dt.time):
        return v.isoformat()
    if isinstance(v, dt.timedelta):
        return v.total_seconds()
    if isinstance(v, bytes | bytearray | memoryview):
        return bytes(v).hex()
    if isinstance(v, uuid.UUID):
        return str(v)
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    return v
