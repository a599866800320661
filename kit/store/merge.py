"""Fold the writers' spool files into the DuckDB file: idempotent, crash-safe, run under the store lock.

How far each spool has been merged is committed in the same transaction as the rows, so a merge that
dies half-way is simply redone; a partial last line (a writer killed mid-write) is never read.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import duckdb

from kit.store.schema import columns
from kit.store.spool import SUFFIX, identity_of_spool, is_alive

CHECK_FIELDS = tuple((c, t) for c, t in columns("check_results") if c not in ("run_id", "case_id", "attempt"))

# Every key any event may carry, with its type: DuckDB reads all spool lines in one pass with this.
EVENT_COLUMNS = {
    "t": "VARCHAR",
    "ts": "TIMESTAMP",
    "run_id": "VARCHAR",
    "source": "VARCHAR",
    "started_at": "TIMESTAMP",
    "git_sha": "VARCHAR",
    "agent": "VARCHAR",
    "model": "VARCHAR",
    "config_hash": "VARCHAR",
    "kit_version": "VARCHAR",
    "owner": "VARCHAR",
    "meta": "JSON",
    "status": "VARCHAR",
    "case_id": "VARCHAR",
    "attempt": "INTEGER",
    "passed": "BOOLEAN",
    "outcome": "VARCHAR",
    "error": "VARCHAR",
    "steps": "INTEGER",
    "tokens": "BIGINT",
    "cost_usd": "DOUBLE",
    "latency_ms": "DOUBLE",
    "trace": "JSON",
    # A case event's check rows (kit.store.rows.case_rows), keyed by the event's run, case and attempt.
    "checks": "STRUCT(" + ", ".join(f'"{c}" {t}' for c, t in CHECK_FIELDS) + ")[]",
    "check": "VARCHAR",
    "gate": "VARCHAR",
    "score": "DOUBLE",
    "threshold": "DOUBLE",
    "reason": "VARCHAR",
    "judge_model": "VARCHAR",
    "rubric_hash": "VARCHAR",
    "prompt": "VARCHAR",
    "raw_answer": "VARCHAR",
}

_COLUMNS_SQL = "{" + ", ".join(f"'{k}': '{v}'" for k, v in EVENT_COLUMNS.items()) + "}"

_APPLY = (
    """INSERT INTO runs (run_id, source, started_at, git_sha, agent, model, config_hash, kit_version,
                         status, owner, meta)
       SELECT run_id, source, started_at, git_sha, agent, model, config_hash, kit_version,
              coalesce(status, 'running'), owner, meta
       FROM ev WHERE t = 'run' AND run_id NOT IN (SELECT run_id FROM runs)
       QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY ts) = 1""",
    """INSERT INTO case_results (run_id, case_id, attempt, passed, steps, tokens, cost_usd, latency_ms,
                                 trace, outcome, error)
       SELECT run_id, case_id, attempt, passed, steps, tokens, cost_usd, latency_ms, trace, outcome, error
       FROM ev WHERE t = 'case'""",
    """INSERT INTO check_results BY NAME
       SELECT run_id, case_id, attempt, unnest(c)
       FROM (SELECT run_id, case_id, attempt, unnest(checks) AS c FROM ev WHERE t IN ('case', 'case_soft'))""",
    """INSERT INTO check_results (run_id, case_id, attempt, "check", gate, outcome, score, reason, threshold)
       SELECT run_id, case_id, attempt, "check", coalesce(gate, 'soft'), outcome, score, reason, threshold
       FROM ev WHERE t = 'check'""",
    """INSERT INTO judge_calls (run_id, case_id, attempt, "check", judge_model, rubric_hash, prompt,
                                raw_answer, score, outcome, recorded_at)
       SELECT run_id, case_id, attempt, "check", judge_model, rubric_hash, prompt, raw_answer, score,
              outcome, ts
       FROM ev WHERE t = 'check' AND (judge_model IS NOT NULL OR raw_answer IS NOT NULL)""",
    """UPDATE runs SET status = f.status, finished_at = f.ts
       FROM (SELECT run_id, last(status ORDER BY ts) AS status, max(ts) AS ts
             FROM ev WHERE t = 'finish' GROUP BY run_id) f
       WHERE runs.run_id = f.run_id""",
)


def merge_spools(con: duckdb.DuckDBPyConnection, directory: Path) -> int:
    """Merge every spool's new complete lines. Returns how many events were merged."""
    if not directory.is_dir():
        _mark_orphans(con)
        return 0
    offsets = dict(con.execute("SELECT spool, merged_bytes FROM spool_offsets").fetchall())
    chunks: list[bytes] = []
    new_offsets: dict[str, int] = {}
    finished: list[Path] = []
    for path in sorted(directory.glob("*" + SUFFIX)):
        # Ask before reading: a writer found dead has written its last byte already.
        alive = is_alive(identity_of_spool(path.name))
        start = offsets.get(path.name, 0)
        try:
            with path.open("rb") as fh:
                fh.seek(start)
                data = fh.read()
        except FileNotFoundError:
            continue
        end = data.rfind(b"\n") + 1
        if end:
            chunks.append(data[:end])
            new_offsets[path.name] = start + end
        if not alive:
            finished.append(path)
    events = sum(chunk.count(b"\n") for chunk in chunks)
    if chunks:
        try:
            _apply(con, directory, chunks, new_offsets)
        except duckdb.Error:
            # A corrupt line must not wedge every later merge: drop the unreadable lines, say so, retry.
            chunks = [_readable_lines(chunk) for chunk in chunks]
            _apply(con, directory, chunks, new_offsets)
    for path in finished:  # fully merged (a torn last line of a dead writer is dropped on purpose)
        path.unlink(missing_ok=True)
        con.execute("DELETE FROM spool_offsets WHERE spool = ?", [path.name])
    _mark_orphans(con)
    return events


def _readable_lines(chunk: bytes) -> bytes:
    good = []
    for line in chunk.splitlines(keepends=True):
        try:
            if isinstance(json.loads(line), dict):
                good.append(line)
                continue
        except ValueError:
            pass
        print(f"kit store: skipped an unreadable spool line: {line[:120]!r}", file=sys.stderr)
    return b"".join(good)


def _apply(con: duckdb.DuckDBPyConnection, directory: Path, chunks: list[bytes], offsets: dict[str, int]) -> None:
    tmp = directory / f".merge-{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    tmp.write_bytes(b"".join(chunks))
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(
                f"""CREATE OR REPLACE TEMP TABLE ev AS SELECT * FROM read_json(?, format = 'newline_delimited',
                    columns = {_COLUMNS_SQL}, maximum_object_size = 1073741824)""",
                [str(tmp)],
            )
            for statement in _APPLY:
                con.execute(statement)
            con.executemany(
                """INSERT INTO spool_offsets VALUES (?, ?)
                   ON CONFLICT (spool) DO UPDATE SET merged_bytes = excluded.merged_bytes""",
                list(offsets.items()),
            )
            con.execute("DROP TABLE ev")
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    finally:
        tmp.unlink(missing_ok=True)


def _mark_orphans(con: duckdb.DuckDBPyConnection) -> bool:
    """A run whose owning process died before finish_run is `incomplete`: its finished results stay."""
    rows = con.execute("SELECT run_id, owner FROM runs WHERE status = 'running' AND owner IS NOT NULL").fetchall()
    dead = [run_id for run_id, owner in rows if not is_alive(owner)]
    if dead:
        con.executemany("UPDATE runs SET status = 'incomplete' WHERE run_id = ?", [[r] for r in dead])
    return bool(dead)


def import_runs(store: Any, other: Path) -> int:
    """Copy into `store` the runs of another store file (say the base branch's) that it lacks, with their
    case and check results; returns how many runs were copied. Copying twice copies nothing."""
    with store.connect() as con:
        con.execute(f"ATTACH {_sql_str(str(other))} AS base (READ_ONLY)")
        try:
            new = [r[0] for r in con.execute("SELECT run_id FROM base.runs EXCEPT SELECT run_id FROM runs").fetchall()]
            for table in ("runs", "case_results", "check_results", "judge_calls"):
                # Only the columns both stores have: the other one may be of an older schema version.
                cols = con.execute(
                    "SELECT column_name FROM information_schema.columns WHERE table_catalog = 'base' "
                    "AND table_name = ? INTERSECT SELECT column_name FROM information_schema.columns "
                    "WHERE table_catalog <> 'base' AND table_name = ?",
                    [table, table],
                ).fetchall()
                if not cols:  # a table the other store's schema version does not have
                    continue
                names = ", ".join(f'"{c}"' for (c,) in sorted(cols))
                con.execute(
                    f"INSERT INTO {table} ({names}) SELECT {names} FROM base.{table} "
                    "WHERE run_id IN (SELECT unnest(?::VARCHAR[]))",
                    [new],
                )
            return len(new)
        finally:
            con.execute("DETACH base")


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"
