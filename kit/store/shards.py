"""Where the runner's results go: the kit's DuckDB store, or (when it cannot be used, or for a shard) a
file with the store's three tables, which `merge_shards` loads into a store.

A shard file is a folder holding `runs.parquet`, `case_results.parquet` and `check_results.parquet`
(written by DuckDB), or one `.json` file `{"runs": [...], "case_results": [...], "check_results": [...]}`.
Columns are the store's (`kit.store.schema`) and rows are `kit.store.rows.case_rows`, so merging is
`INSERT ... BY NAME SELECT * FROM read_parquet`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from kit import duck
from kit.errors import KitInputError
from kit.store.rows import case_rows, shaped
from kit.store.schema import columns, migrate

TABLES = ("runs", "case_results", "check_results")


def _names(table: str) -> list[str]:
    return [name for name, _ in columns(table)]


def _encoded(table: str, row: dict[str, Any]) -> dict[str, Any]:
    """A row with its JSON columns as JSON text, as DuckDB takes them from Python and a `.json` shard keeps them."""
    json_cols = {name for name, kind in columns(table) if kind == "JSON"}
    return {
        c: json.dumps(v, default=str) if c in json_cols and v is not None and not isinstance(v, str) else v
        for c, v in row.items()
    }


def rows(run: dict[str, Any], outcomes: Iterable[Any]) -> dict[str, list[dict[str, Any]]]:
    """The three tables' rows for one suite run: the run, and `case_rows` of each outcome (an object with
    `case_run` and `trace`, as `kit.runner.invoke` returns)."""
    tables: dict[str, list[dict[str, Any]]] = {"runs": [shaped("runs", {c: run.get(c) for c in _names("runs")})]}
    tables["case_results"], tables["check_results"] = [], []
    for o in outcomes:
        for table, found in case_rows(run["run_id"], o.case_run, o.trace, "hard").items():
            tables[table].extend(found)
    return {table: [_encoded(table, r) for r in found] for table, found in tables.items()}


# --- files ----------------------------------------------------------------------------------------------


def write_file(path: str | Path, tables: dict[str, list[dict[str, Any]]]) -> Path:
    """A `.json` file, or else a folder of Parquet files (one per table)."""
    p = Path(path)
    if p.suffix == ".json":
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(tables, default=str), encoding="utf-8")
        return p
    p.mkdir(parents=True, exist_ok=True)
    con = duck.connect()
    try:
        migrate(con)  # the store's own tables, so a shard file has exactly the store's columns and types
        for table in TABLES:
            _insert(con, table, tables[table], _names(table))
            target = str(p / f"{table}.parquet").replace("'", "''")
            con.execute(f"COPY {table} TO '{target}' (FORMAT parquet)")
    finally:
        con.close()
    return p


def _insert(con: Any, table: str, found: list[dict[str, Any]], cols: list[str]) -> None:
    if found:
        names = ", ".join(f'"{c}"' for c in cols)
        marks = ", ".join("?" * len(cols))
        con.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", [[r.get(c) for c in cols] for r in found])


def merge_shards(con: Any, paths: Sequence[str | Path]) -> dict[str, int]:
    """Load shard files into a store connection (tables already migrated). Merging a shard twice adds
    nothing: runs are keyed by run_id, results by (run_id, case_id, attempt). Returns rows added."""
    added = {t: 0 for t in TABLES}
    for path in paths:
        p = Path(path)
        for table in TABLES:
            source = _source(con, p, table)
            before = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            if table == "runs":
                con.execute(
                    f"INSERT INTO runs BY NAME SELECT * FROM {source} s WHERE s.run_id NOT IN (SELECT run_id FROM runs)"
                )
            else:
                # A (run, case, attempt) already in the table came from an earlier merge of this shard.
                con.execute(
                    f"INSERT INTO {table} BY NAME SELECT s.* FROM {source} s WHERE NOT EXISTS "
                    f"(SELECT 1 FROM {table} t WHERE t.run_id = s.run_id AND t.case_id = s.case_id "
                    "AND t.attempt = s.attempt)"
                )
            added[table] += con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] - before
    return added


def _source(con: Any, p: Path, table: str) -> str:
    if p.is_dir():
        f = p / f"{table}.parquet"
        if not f.exists():
            raise KitInputError(f"not a shard folder: no {table}.parquet", file=str(p))
        return "read_parquet('" + str(f).replace("'", "''") + "')"
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise KitInputError(f"cannot read shard file: {e}", file=str(p)) from None
    if not isinstance(data, dict) or table not in data:
        raise KitInputError(f"not a shard file: no {table!r} table", file=str(p))
    rows = data[table]
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise KitInputError(f"not a shard file: {table!r} must be a list of rows (objects)", file=str(p))
    schema = ", ".join(f'"{name}" {kind}' for name, kind in columns(table))
    con.execute("DROP TABLE IF EXISTS _shard_src")
    con.execute(f"CREATE TEMP TABLE _shard_src ({schema})")
    try:
        _insert(con, "_shard_src", rows, _names(table))
    except duckdb.Error as e:
        raise KitInputError(f"not a shard file: table {table!r}: {str(e).splitlines()[0]}", file=str(p)) from None
    return "_shard_src"


def shard_run_ids(con: Any, paths: Sequence[str | Path]) -> list[str]:
    """The run ids the shard files hold, in order of first appearance."""
    ids: list[str] = []
    for p in paths:
        for (rid,) in con.execute(f"SELECT run_id FROM {_source(con, Path(p), 'runs')}").fetchall():
            if rid not in ids:
                ids.append(rid)
    return ids


def load_case_runs(con: Any, run_id: str) -> list[Any]:
    """A stored suite run's results as CaseRuns (hard gate), in case and attempt order."""
    from kit.result import CaseRun, Result

    checks: dict[tuple[str, int], list[Result]] = {}
    for case_id, attempt, check, outcome, score, reason, tb in con.execute(
        'SELECT case_id, attempt, "check", outcome, score, reason, traceback FROM check_results '
        "WHERE run_id = ? AND gate = 'hard' AND \"check\" <> 'infrastructure' ORDER BY rowid",
        [run_id],
    ).fetchall():
        result = Result(check, outcome == "pass", reason or "", error=outcome == "error", score=score, traceback=tb)
        checks.setdefault((case_id, attempt), []).append(result)
    rows = con.execute(
        "SELECT case_id, attempt, error FROM case_results WHERE run_id = ? ORDER BY case_id, attempt", [run_id]
    ).fetchall()
    return [
        CaseRun(case_id, attempt, tuple(checks.get((case_id, attempt), ())), run_id=run_id, error=error)
        for case_id, attempt, error in rows
    ]
