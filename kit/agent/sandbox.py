"""The sandbox: an in-memory SQLite database seeded from the fixtures, fresh for every run.

Each process seeds a template database once per fixture file; a run gets its own in-memory connection
restored from it (`backup`, a page copy of ~30 kB: tens of microseconds), so runs never see each other's
writes, in threads or processes alike, and a run costs no per-statement overhead worth measuring.

What a run sees is what the columns' types say (fixtures.TABLES): VARCHAR columns hold strings, DOUBLE
columns floats (120.0, never 120), NULL is None; `end_state` lists every table ordered by its first
column, NULLs last, ties in insertion order.
"""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from typing import Any

from kit.agent.fixtures import TABLES, fixtures_path, load_fixtures

# SQLite column types with the affinity of the fixture types: values are stored as given, converted here.
_SQL_TYPES = {"VARCHAR": "TEXT", "DOUBLE": "REAL"}

_lock = threading.Lock()
_templates: dict[str, sqlite3.Connection] = {}
_inherited: list[sqlite3.Connection] = []


def _after_fork_in_child() -> None:
    # SQLite forbids using a connection opened before fork() in the child, and the lock may have been held
    # by a parent thread: a forked worker (kit run's pool) starts with neither and seeds its own template
    # on first use. The inherited connections are kept referenced, never closed: closing one in the child
    # would touch state that belongs to the parent.
    global _lock
    _lock = threading.Lock()
    _inherited.extend(_templates.values())
    _templates.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _cell(value: Any, sql_type: str, where: str) -> Any:
    """A fixture value as the column's type holds it (what the fixture's earlier SQL casts gave)."""
    if value is None:
        return None
    if sql_type == "DOUBLE":
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: {value!r} is not a number") from None
        if not math.isfinite(number):
            raise ValueError(f"{where}: {value!r} is not a finite number")
        return number + 0.0  # -0.0 is 0.0
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(float(value))
    return str(value)


def _template(path: str) -> sqlite3.Connection:
    """The process's seeded template for a fixture file (created on first use; read only under the lock)."""
    db = _templates.get(path)
    if db is None:
        rows = load_fixtures(path)
        db = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        for table, columns in TABLES.items():
            db.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {_SQL_TYPES[t]}' for c, t in columns.items())})")
            values = [
                tuple(_cell(r[c], t, f"{path}: {table}[{n}].{c}") for c, t in columns.items())
                for n, r in enumerate(rows[table])
            ]
            db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(columns))})", values)
        _templates[path] = db
    return db


class Sandbox:
    """One run's private copy of the shop database."""

    def __init__(self, path: str | None = None) -> None:
        self.path = str(path or fixtures_path())
        # check_same_thread off: a conversation may be driven from another thread than the one that opened
        # it (a runner's timeout); the connection is this run's alone and SQLite serialises its use.
        self._conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        try:
            with _lock:
                _template(self.path).backup(self._conn)
        except BaseException:
            self._conn.close()
            raise

    def query(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        cur = self._conn.execute(sql, params or [])
        if cur.description is None:
            return []
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        self._conn.execute(sql, params or [])

    def end_state(self) -> dict[str, list[dict[str, Any]]]:
        """Every table as rows, in a stable order (the first column, NULLs last, then insertion), for the
        trace's `end_state`."""
        out = {}
        for table, columns in TABLES.items():
            first = next(iter(columns))
            out[table] = self.query(f"SELECT * FROM {table} ORDER BY {first} IS NULL, {first}, rowid")
        return out

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
