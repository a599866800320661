"""The sandbox: an in-memory DuckDB database seeded from the fixtures, fresh for every run.

Opening a DuckDB database costs ~25 ms, so each process opens one and seeds it once (schema `seed`);
a run gets its own connection (`cursor()`, microseconds) holding TEMP copies of the writable tables.
TEMP tables are private to their connection and vanish when it closes, so runs never see each other's
writes, in threads or processes alike.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from kit.agent.fixtures import TABLES, WRITABLE, fixtures_path, load_fixtures

_lock = threading.Lock()
_databases: dict[str, Any] = {}
_inherited: list[Any] = []


def _after_fork_in_child() -> None:
    # DuckDB's threads do not survive fork, and the lock may have been held by a parent thread: a forked
    # worker (kit run's pool) starts with neither, and opens its own database on first use.
    # The inherited connections are kept referenced, never closed: closing one in the child could wait
    # on threads that only exist in the parent.
    global _lock
    _lock = threading.Lock()
    _inherited.extend(_databases.values())
    _databases.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _sql_literal(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | float):
        return repr(float(value))
    return "'" + str(value).replace("'", "''") + "'"


def _seeded_database(path: str) -> Any:
    """The process's seeded database for a fixture file (created on first use)."""
    with _lock:
        db = _databases.get(path)
        if db is None:
            import duckdb  # imported here: `import kit.agent` stays light

            db = duckdb.connect(":memory:")
            db.execute("CREATE SCHEMA seed")
            rows = load_fixtures(path)
            for table, columns in TABLES.items():
                cols = ", ".join(f"{c} {t}" for c, t in columns.items())
                db.execute(f"CREATE TABLE seed.{table} ({cols})")
                if rows[table]:
                    values = ", ".join("(" + ", ".join(_sql_literal(r[c]) for c in columns) + ")" for r in rows[table])
                    db.execute(f"INSERT INTO seed.{table} VALUES {values}")
            _databases[path] = db
        return db


class Sandbox:
    """One run's private view of the shop database. Unqualified table names resolve to this run's data."""

    def __init__(self, path: str | None = None) -> None:
        self.path = str(path or fixtures_path())
        self._conn = _seeded_database(self.path).cursor()
        script = [f"CREATE TEMP TABLE {t} AS SELECT * FROM seed.{t}" for t in WRITABLE]
        # Read-only tables are views onto the seed: nothing to copy.
        script += [f"CREATE TEMP VIEW {t} AS SELECT * FROM seed.{t}" for t in TABLES if t not in WRITABLE]
        self._conn.execute(";\n".join(script))

    def query(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        cur = self._conn.execute(sql, params or [])
        if cur.description is None:
            return []
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]

    def execute(self, sql: str, params: list[Any] | None = None) -> None:
        self._conn.execute(sql, params or [])

    def end_state(self) -> dict[str, list[dict[str, Any]]]:
        """Every table as rows, in a stable order (the first column), for the trace's `end_state`."""
        return {t: self.query(f"SELECT * FROM {t} ORDER BY 1") for t in TABLES}

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
