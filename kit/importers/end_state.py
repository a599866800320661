"""The tables recorded after a run, for `kit import --end-state FILE`: the trace's `end_state` (table -> rows).

FILE is JSON (`{"table": [{"column": value, ...}, ...], ...}`), a SQLite database or a DuckDB database
(told apart by their first bytes). A database's tables are read whole, read-only; DuckDB is opened with
extension autoinstall and autoload off, so reading a file never fetches or loads code. Values JSON cannot
hold are written as JSON would read them back: decimals as numbers, times as ISO text, bytes as hex.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import uuid
from pathlib import Path
from typing import Any

from kit.errors import KitInputError

SQLITE_MAGIC = b"SQLite format 3\x00"
DUCKDB_MAGIC = b"DUCK"  # at offset 8 of a DuckDB database file


def read_end_state(path: str | Path) -> dict[str, list[dict[str, Any]]]:
    """Every table of the file as a list of row objects, or KitInputError naming the file (and the table)."""
    p = Path(path)
    try:
        with p.open("rb") as f:
            head = f.read(16)
    except OSError as e:
        raise KitInputError(f"--end-state: cannot read: {e.strerror}", file=str(p)) from None
    if head.startswith(SQLITE_MAGIC):
        return _sqlite(p)
    if head[8:12] == DUCKDB_MAGIC:
        return _duckdb(p)
    return _json_tables(p)


def _json_tables(p: Path) -> dict[str, list[dict[str, Any]]]:
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


def _sqlite(p: Path) -> dict[str, list[dict[str, Any]]]:
    import sqlite3

    try:
        con = sqlite3.connect(f"{p.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise KitInputError(f"--end-state: cannot open the SQLite database: {e}", file=str(p)) from None
    try:
        names = [
            r[0]
            for r in con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )
        ]
        out = {}
        for name in names:
            cur = con.execute(f"SELECT * FROM {_quote(name)}")
            out[name] = _rows([d[0] for d in cur.description], cur.fetchall())
        return out
    except sqlite3.Error as e:
        raise KitInputError(f"--end-state: cannot read the SQLite database: {e}", file=str(p)) from None
    finally:
        con.close()


def _duckdb(p: Path) -> dict[str, list[dict[str, Any]]]:
    import duckdb

    from kit import duck

    try:
        con = duck.connect(str(p), read_only=True)
    except duckdb.Error as e:
        raise KitInputError(f"--end-state: cannot open the DuckDB database: {e}", file=str(p)) from None
    try:
        tables = con.execute(
            "SELECT table_schema, table_name FROM information_schema.tables "
            "WHERE table_type = 'BASE TABLE' ORDER BY table_schema = 'main' DESC, table_schema, table_name"
        ).fetchall()
        out: dict[str, list[dict[str, Any]]] = {}
        for schema, name in tables:
            key = name if schema == "main" else f"{schema}.{name}"
            cur = con.execute(f"SELECT * FROM {_quote(schema)}.{_quote(name)}")
            out[key] = _rows([d[0] for d in cur.description], cur.fetchall())
        return out
    except duckdb.Error as e:
        raise KitInputError(f"--end-state: cannot read the DuckDB database: {e}", file=str(p)) from None
    finally:
        con.close()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _rows(columns: list[str], rows: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
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
