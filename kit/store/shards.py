"""Where the runner's results go: the kit's DuckDB store, or (when it cannot be used, or for a shard) a
file with the store's three tables, which `merge_shards` loads into a store.

A shard file is a folder holding `runs.parquet`, `case_results.parquet` and `check_results.parquet`
(written by DuckDB), or one `.json` file `{"runs": [...], "case_results": [...], "check_results": [...]}`.
Columns are the store's (`kit.store.schema`) and rows are `kit.store.rows.case_rows`, so merging is
`INSERT ... BY NAME SELECT * FROM read_parquet`.

A shard's run row records which slice it is (`meta.shard`, `shard_record`): its index and count, the hash
of the whole suite, the suite's number of cases and the shard's case ids; the row itself has the run id
and agent. `merge_suite` checks a set of shards against each other before it stores anything: a missing,
duplicated, foreign (another run id, agent or suite) or unreadable shard is refused, naming it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
from pydantic import BaseModel, ConfigDict, Field, ValidationError

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


# --- a set of shards as one suite run -------------------------------------------------------------------


class ShardRecord(BaseModel):
    """Which slice of which suite a shard file holds (its run row's `meta.shard`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    index: int = Field(ge=1)
    count: int = Field(ge=1)
    suite: str = Field(min_length=1)  # suite_hash of the whole suite the shards split
    total: int = Field(ge=0)  # how many cases the whole suite has
    cases: tuple[str, ...] = ()  # this shard's case ids


def suite_hash(cases: Sequence[Any], runs: int | None) -> str:
    """Same cases (ids, inputs, checks, runs) and the same `--runs`: the same hash, in any order."""
    h = hashlib.sha256(f"runs={runs}".encode())
    for c in sorted(cases, key=lambda c: c.id):
        raw = [c.id, c.input, getattr(c, "turns", None), c.runs, [s.raw for s in c.checks]]
        h.update(json.dumps(raw, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def shard_record(index: int, count: int, suite: str, total: int, case_ids: Iterable[str]) -> dict[str, Any]:
    return ShardRecord(index=index, count=count, suite=suite, total=total, cases=tuple(case_ids)).model_dump()


@dataclass(frozen=True)
class Shard:
    path: str
    run_id: str
    agent: str | None
    status: str | None
    record: ShardRecord


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]


def _read_shard(con: Any, p: Path) -> Shard:
    """One shard file read whole (every row of every table decoded, so a cut or corrupt file is found here,
    not half-way through a merge), with its record; KitInputError naming it otherwise."""
    where = str(p)
    if not p.exists():
        raise KitInputError("no such shard file or folder", file=where)
    try:
        for table in TABLES:
            source = _source(con, p, table)
            con.execute(f"CREATE OR REPLACE TEMP TABLE _whole AS SELECT * FROM {source}")
        runs = _source(con, p, "runs")
        found = con.execute(f"SELECT run_id, agent, status, meta FROM {runs}").fetchall()
        ids = {r[0] for r in con.execute(f"SELECT DISTINCT run_id FROM {_source(con, p, 'case_results')}").fetchall()}
        cases = {
            r[0] for r in con.execute(f"SELECT DISTINCT case_id FROM {_source(con, p, 'case_results')}").fetchall()
        }
    except KitInputError:
        raise
    except (duckdb.Error, OSError, ValueError) as e:
        raise KitInputError(f"not a readable shard (cut or corrupt?): {_first_line(e)}", file=where) from None
    if len(found) != 1:
        raise KitInputError(f"not a shard file: {len(found)} runs rows, a shard has exactly one", file=where)
    run_id, agent, status, meta = found[0]
    try:
        raw = (json.loads(meta) if isinstance(meta, str) else meta or {}).get("shard")
        record = ShardRecord.model_validate(raw)
    except (ValueError, AttributeError, ValidationError):
        raise KitInputError(
            "no shard record (which slice of which suite it holds): made by an older kit, or not a shard; "
            "run the shards again with this kit",
            file=where,
        ) from None
    if ids - {run_id}:
        raise KitInputError(f"results of another run ({', '.join(sorted(map(str, ids - {run_id})))})", file=where)
    if cases - set(record.cases):
        raise KitInputError(
            f"results of cases not in the shard: {', '.join(sorted(cases - set(record.cases)))}", file=where
        )
    if set(record.cases) - cases:
        lost = ", ".join(sorted(set(record.cases) - cases)[:5])
        raise KitInputError(f"cut or corrupt shard: no results for its cases {lost}", file=where)
    return Shard(where, str(run_id), agent, status, record)


def check_shards(paths: Sequence[str | Path]) -> list[Shard]:
    """The shards as one suite run, or KitInputError naming the shard that does not belong: every slice
    1..count present once, all of one run id, agent and suite, no case in two slices."""
    if not paths:
        raise KitInputError("no shard files to merge")
    con = duck.connect()
    try:
        migrate(con)
        shards = [_read_shard(con, Path(p)) for p in paths]
    finally:
        con.close()
    first = shards[0]
    for s in shards[1:]:
        for what, mine, theirs in (
            ("run id", s.run_id, first.run_id),
            ("agent", s.agent, first.agent),
            ("suite (its cases, checks or runs differ)", s.record.suite, first.record.suite),
            ("shard count", s.record.count, first.record.count),
        ):
            if mine != theirs:
                raise KitInputError(
                    f"foreign shard: its {what} is {mine!r}, shard {first.path} has {theirs!r} (give every shard "
                    "of one suite the same --run-id, agent, cases and --shard i/N)",
                    file=s.path,
                )
    seen: dict[int, Shard] = {}
    owner: dict[str, str] = {}
    for s in shards:
        if s.record.index in seen:
            raise KitInputError(
                f"duplicate shard: {s.record.index}/{s.record.count} is also {seen[s.record.index].path}", file=s.path
            )
        seen[s.record.index] = s
        for c in s.record.cases:
            if c in owner:
                raise KitInputError(f"case {c} is in two shards (also {owner[c]})", file=s.path)
            owner[c] = s.path
    missing = [i for i in range(1, first.record.count + 1) if i not in seen]
    if missing:
        raise KitInputError(
            f"shard(s) {', '.join(f'{i}/{first.record.count}' for i in missing)} of run {first.run_id} missing: "
            f"merging {len(shards)} of {first.record.count} would store a suite run with cases left out"
        )
    if len(owner) != first.record.total:
        raise KitInputError(
            f"the shards of run {first.run_id} hold {len(owner)} cases, their suite has {first.record.total}"
        )
    return shards


def merge_suite(con: Any, paths: Sequence[str | Path]) -> tuple[list[Shard], dict[str, int]]:
    """Check the shards (`check_shards`), then load them in one transaction: nothing is stored unless the
    whole suite is, and the run is `complete` only when every shard's run was. A run id the store holds
    already under another source or agent is refused."""
    shards = check_shards(paths)
    run_id = shards[0].run_id
    row = con.execute("SELECT source, agent FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is not None and (row[0] != "kit" or row[1] != shards[0].agent):
        raise KitInputError(
            f"the store holds run {run_id} already, of source {row[0]} and agent {row[1]!r}, not the shards' "
            f"{shards[0].agent!r}",
            file=shards[0].path,
        )
    con.execute("BEGIN TRANSACTION")
    try:
        added = merge_shards(con, [s.path for s in shards])
        if any(s.status != "complete" for s in shards):
            con.execute("UPDATE runs SET status = 'incomplete' WHERE run_id = ?", [run_id])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return shards, added
