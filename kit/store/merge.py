"""Fold the writers' spool files into the DuckDB file: idempotent, crash-safe, run under the store lock.

How far each spool has been merged is committed in the same transaction as the rows, so a merge that
dies half-way is simply redone; a partial last line (a writer killed mid-write) is never read.

No record can wedge the store: when DuckDB refuses a batch, every line is checked against the column
types (`kit.store.values`), and a line that still cannot be kept is quarantined (the `quarantine` table
keeps it with its spool file and line) while the rest are merged. Its run is then `incomplete`, so a gate
never passes a run with a result missing. A spool cut or rewritten under its live writer is noticed (the
merged prefix changed, or the writer's line numbers jump) and reported the same way.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from kit.store.spool import SUFFIX, identity_of_spool, is_alive
from kit.store.values import EVENT_COLUMNS, BadRecord, check_fields, encode_line, normalise_event


@cache
def _columns_sql() -> str:
    """Every spool key with its DuckDB type, as `read_json`'s `columns` argument (check rows as a list of
    structs)."""
    checks = "STRUCT(" + ", ".join(f'"{c}" {t}' for c, t in check_fields().items()) + ")[]"
    return "{" + ", ".join(f"'{k}': '{v}'" for k, v in {**EVENT_COLUMNS, "checks": checks}.items()) + "}"


RECORD_CHARS = 100_000  # how much of a quarantined line the table keeps

_APPLY = (
    """INSERT INTO runs (run_id, source, started_at, git_sha, agent, model, config_hash, kit_version,
                         status, owner, meta, kind, evals_id, rules)
       SELECT run_id, source, started_at, git_sha, agent, model, config_hash, kit_version,
              coalesce(status, 'running'), owner, meta, coalesce(kind, 'golden'), evals_id, rules
       FROM ev WHERE t = 'run' AND run_id NOT IN (SELECT run_id FROM runs)
       QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY ts) = 1""",
    """INSERT INTO case_results (run_id, case_id, attempt, passed, steps, tokens, cost_usd, latency_ms,
                                 trace, outcome, error, agent_calls, retries, agent_s, kit_s)
       SELECT run_id, case_id, attempt, passed, steps, tokens, cost_usd, latency_ms, trace, outcome, error,
              agent_calls, retries, agent_s, kit_s
       FROM ev WHERE t = 'case'""",
    """INSERT INTO check_results BY NAME
       SELECT run_id, case_id, attempt, unnest(c)
       FROM (SELECT run_id, case_id, attempt, unnest(checks) AS c FROM ev WHERE t IN ('case', 'case_soft'))""",
    """INSERT INTO check_results (run_id, case_id, attempt, "check", gate, outcome, score, reason, threshold)
       SELECT run_id, case_id, attempt, "check", coalesce(gate, 'soft'), outcome, score, reason, threshold
       FROM ev WHERE t = 'check'""",
    """INSERT INTO judge_calls (run_id, case_id, attempt, "check", judge_model, rubric_hash, prompt,
                                raw_answer, score, outcome, recorded_at, prompt_tokens, completion_tokens,
                                cost_usd, latency_ms, sample, reason, error)
       SELECT run_id, case_id, attempt, "check", judge_model, rubric_hash, prompt, raw_answer, score,
              outcome, ts, prompt_tokens, completion_tokens, cost_usd, latency_ms, sample, reason, error
       FROM ev WHERE t = 'judge' OR (t = 'check' AND (judge_model IS NOT NULL OR raw_answer IS NOT NULL))""",
    """UPDATE runs SET status = f.status, finished_at = f.ts, model = coalesce(runs.model, f.model)
       FROM (SELECT run_id, last(status ORDER BY ts) AS status, max(ts) AS ts, any_value(model) AS model
             FROM ev WHERE t = 'finish' GROUP BY run_id) f
       WHERE runs.run_id = f.run_id""",
)
# A run that lost a record is never `complete`, whenever its finish event arrives.
_DAMAGED = """UPDATE runs SET status = 'incomplete' WHERE status = 'complete'
              AND run_id IN (SELECT run_id FROM quarantine WHERE run_id IS NOT NULL)"""


@dataclass
class _Line:
    spool: str
    number: int  # 1-based line of its spool file
    raw: bytes


@dataclass
class _Problem:
    spool: str
    line: int | None
    problem: str
    raw: bytes | None = None
    run_id: str | None = None
    case_id: str | None = None
    attempt: int | None = None
    owner: str | None = None  # a cut spool: the runs of its writer lost records


@dataclass
class _Spool:
    path: Path
    lines: list[_Line] = field(default_factory=list)
    problems: list[_Problem] = field(default_factory=list)
    state: tuple[int, int, int | None] = (0, 0, None)  # merged bytes, merged lines, last merged seq


def merge_spools(con: duckdb.DuckDBPyConnection, directory: Path) -> int:
    """Merge every spool's new complete lines. Returns how many events were merged (or quarantined)."""
    if not directory.is_dir():
        _mark_orphans(con)
        return 0
    offsets = {
        r[0]: (int(r[1]), int(r[2] or 0), r[3])
        for r in con.execute("SELECT spool, merged_bytes, merged_lines, merged_seq FROM spool_offsets").fetchall()
    }
    spools: list[_Spool] = []
    finished: list[Path] = []
    for path in sorted(directory.glob("*" + SUFFIX)):
        # Ask before reading: a writer found dead has written its last byte already.
        alive = is_alive(identity_of_spool(path.name))
        sp = _read(path, offsets.get(path.name, (0, 0, None)))
        if sp is None:
            continue
        if sp.lines or sp.problems or sp.state != offsets.get(path.name, (0, 0, None)):
            spools.append(sp)
        if not alive:
            finished.append(path)
    events = sum(len(sp.lines) for sp in spools)
    if spools:
        _merge(con, directory, spools)
    for path in finished:  # fully merged (a torn last line of a dead writer is dropped on purpose)
        path.unlink(missing_ok=True)
        con.execute("DELETE FROM spool_offsets WHERE spool = ?", [path.name])
    _mark_orphans(con)
    return events


def _seq(raw: bytes) -> int | None:
    try:
        seq = json.loads(raw).get("seq")
    except (ValueError, AttributeError, RecursionError):
        return None
    return seq if isinstance(seq, int) and not isinstance(seq, bool) else None


def _read(path: Path, state: tuple[int, int, int | None]) -> _Spool | None:
    """The spool's complete lines past what was merged; a cut or rewritten spool is read again from its
    start, keeping the lines its writer numbered after the last merged one, and reported."""
    start, merged_lines, last_seq = state
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            cut = None
            data = b""
            if size < start:
                cut = f"cut from {start} to {size} bytes under its writer"
            else:
                fh.seek(max(start - 1, 0))
                data = fh.read()
                if start:
                    boundary, data = data[:1], data[1:]
                    if boundary != b"\n":
                        cut = "rewritten under its writer (the merged part changed)"
                if cut is None and last_seq is not None and b"\n" in data:
                    first = _seq(data[: data.index(b"\n")])
                    if first is not None and first != last_seq + 1:
                        cut = f"cut under its writer (line number {first} follows {last_seq})"
            if cut is not None:
                fh.seek(0)
                data = fh.read()
    except FileNotFoundError:
        return None
    sp = _Spool(path)
    end = data.rfind(b"\n") + 1
    raws = data[:end].split(b"\n")[:-1] if end else []
    if cut is None:
        sp.lines = [_Line(path.name, merged_lines + i + 1, raw) for i, raw in enumerate(raws)]
        sp.state = (start + end, merged_lines + len(raws), _seq(raws[-1]) if raws else last_seq)
        if sp.state[2] is None:
            sp.state = (*sp.state[:2], last_seq)
        return sp
    kept = []
    for i, raw in enumerate(raws):
        seq = _seq(raw)
        if seq is None or last_seq is None or seq > last_seq:
            kept.append(_Line(path.name, i + 1, raw))
    seqs = [s for s in (_seq(line.raw) for line in kept) if s is not None]
    if last_seq is not None and seqs and min(seqs) > last_seq + 1:
        lost = f"{min(seqs) - last_seq - 1} record(s) lost (line numbers {last_seq + 1} to {min(seqs) - 1})"
    else:
        lost = "records written since the last merge may be lost"
    owner = identity_of_spool(path.name)
    sp.problems.append(_Problem(path.name, None, f"spool {cut}: {lost}", owner=owner))
    sp.lines = kept
    sp.state = (end, len(raws), max(seqs) if seqs else last_seq)
    return sp


def _merge(con: duckdb.DuckDBPyConnection, directory: Path, spools: list[_Spool]) -> None:
    lines = [line for sp in spools for line in sp.lines]
    problems = [p for sp in spools for p in sp.problems]
    try:
        _apply(con, directory, [line.raw for line in lines], spools, problems)
        _say(directory, problems)
        return
    except duckdb.Error:
        pass
    # DuckDB refused the batch: check every line, keep what can be kept (fixed where it can be), retry.
    good: list[_Line] = []
    for line in lines:
        try:
            good.append(_Line(line.spool, line.number, encode_line(normalise_event(json.loads(line.raw)))))
        except (ValueError, RecursionError) as e:
            why = str(e) if isinstance(e, BadRecord) else f"not readable JSON: {e}"
            problems.append(_bad(line, why))
    try:
        _apply(con, directory, [line.raw for line in good], spools, problems)
    except duckdb.Error:
        # Something the checks above missed: find the lines DuckDB refuses on their own, keep the rest.
        refused = _refused(con, directory, good)
        problems += [_bad(line, why) for line, why in refused]
        bad = {id(line) for line, _ in refused}
        _apply(con, directory, [line.raw for line in good if id(line) not in bad], spools, problems)
    _say(directory, problems)


def _bad(line: _Line, why: str) -> _Problem:
    p = _Problem(line.spool, line.number, why, raw=line.raw)
    try:
        ev = json.loads(line.raw)
    except (ValueError, RecursionError):
        return p
    if isinstance(ev, dict):
        if isinstance(ev.get("run_id"), str) and ev["run_id"]:
            p.run_id = ev["run_id"]
        if ev.get("t") == "case" and isinstance(ev.get("case_id"), str) and ev["case_id"]:
            p.case_id = ev["case_id"]
            attempt = ev.get("attempt")
            ok = isinstance(attempt, int) and not isinstance(attempt, bool) and 0 <= attempt < 2**31
            p.attempt = attempt if ok else None
    return p


def _refused(con: duckdb.DuckDBPyConnection, directory: Path, lines: list[_Line]) -> list[tuple[_Line, str]]:
    """The lines DuckDB refuses, found by halving: a trial that fails is split until one line is left."""
    try:
        _apply(con, directory, [line.raw for line in lines], [], [], trial=True)
        return []
    except duckdb.Error as e:
        if len(lines) == 1:
            return [(lines[0], "refused by the store: " + str(e).splitlines()[0][:300])]
    mid = len(lines) // 2
    return _refused(con, directory, lines[:mid]) + _refused(con, directory, lines[mid:])


def _apply(
    con: duckdb.DuckDBPyConnection,
    directory: Path,
    raws: list[bytes],
    spools: list[_Spool],
    problems: list[_Problem],
    *,
    trial: bool = False,
) -> None:
    tmp = directory / f".merge-{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    tmp.write_bytes(b"".join(raw + b"\n" for raw in raws))
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(
                f"""CREATE OR REPLACE TEMP TABLE ev AS SELECT * FROM read_json(?, format = 'newline_delimited',
                    columns = {_columns_sql()}, maximum_object_size = 1073741824)""",
                [str(tmp)],
            )
            for statement in _APPLY:
                con.execute(statement)
            if trial:
                con.execute("ROLLBACK")
                return
            _quarantine(con, problems)
            con.execute(_DAMAGED)
            con.executemany(
                """INSERT INTO spool_offsets VALUES (?, ?, ?, ?)
                   ON CONFLICT (spool) DO UPDATE SET merged_bytes = excluded.merged_bytes,
                   merged_lines = excluded.merged_lines, merged_seq = excluded.merged_seq""",
                [[sp.path.name, *sp.state] for sp in spools],
            )
            con.execute("DROP TABLE ev")
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    finally:
        tmp.unlink(missing_ok=True)


def _quarantine(con: duckdb.DuckDBPyConnection, problems: list[_Problem]) -> None:
    """Keep each bad record with where it came from; a lost case result becomes an error result of its run."""
    for p in problems:
        record = None if p.raw is None else p.raw.decode("utf-8", "replace")[:RECORD_CHARS]
        run_ids: list[str | None] = [p.run_id]
        if p.owner is not None:
            run_ids = [r[0] for r in con.execute("SELECT run_id FROM runs WHERE owner = ?", [p.owner]).fetchall()]
        for run_id in run_ids or [None]:
            con.execute(
                "INSERT INTO quarantine VALUES (now(), ?, ?, ?, ?, ?)", [p.spool, p.line, run_id, p.problem, record]
            )
        if p.run_id and p.case_id:
            why = f"the store quarantined this result (spool {p.spool}, line {p.line}): {p.problem}"
            con.execute(
                "INSERT INTO case_results (run_id, case_id, attempt, passed, outcome, error) "
                "VALUES (?, ?, ?, false, 'error', ?)",
                [p.run_id, p.case_id, p.attempt, why],
            )
            con.execute(
                'INSERT INTO check_results (run_id, case_id, attempt, "check", gate, outcome, reason) '
                "VALUES (?, ?, ?, 'infrastructure', 'hard', 'error', ?)",
                [p.run_id, p.case_id, p.attempt, why],
            )


def _say(directory: Path, problems: list[_Problem]) -> None:
    for p in problems:
        where = f"{directory / p.spool}" + (f": line {p.line}" if p.line is not None else "")
        print(f"kit store: {where}: {p.problem} (kept in the store's quarantine table)", file=sys.stderr)


def _mark_orphans(con: duckdb.DuckDBPyConnection) -> bool:
    """A run whose owning process died before finish_run is `incomplete`: its finished results stay."""
    rows = con.execute("SELECT run_id, owner FROM runs WHERE status = 'running' AND owner IS NOT NULL").fetchall()
    dead = [run_id for run_id, owner in rows if not is_alive(owner)]
    if dead:
        con.executemany("UPDATE runs SET status = 'incomplete' WHERE run_id = ?", [[r] for r in dead])
    return bool(dead)


def import_runs(store: Any, other: Path) -> int:
    """Copy into `store` the runs of another store file (say the base branch's) that it lacks, with their
    case and check results and judge calls, and the calibrations it lacks; returns how many runs were
    copied. Copying twice copies nothing."""
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
            # And the base's rubric calibrations, so soft gates say how far to trust them in a new store (CI).
            has = "SELECT count(*) FROM information_schema.tables WHERE table_catalog = 'base' AND table_name = ?"
            if con.execute(has, ["calibrations"]).fetchone() == (1,):
                con.execute(
                    "INSERT INTO calibrations BY NAME SELECT * FROM base.calibrations "
                    "WHERE calibration_id NOT IN (SELECT calibration_id FROM calibrations)"
                )
            # And production traces (`kit serve`: one store shard per receiver), each trace id once.
            if con.execute(has, ["production_traces"]).fetchone() == (1,):
                con.execute(
                    "CREATE TEMP TABLE _new_traces AS SELECT trace_id FROM base.production_traces "
                    "EXCEPT SELECT trace_id FROM production_traces"
                )
                try:
                    for table in ("production_traces", "production_checks"):
                        con.execute(
                            f"INSERT INTO {table} BY NAME SELECT * FROM base.{table} "
                            "WHERE trace_id IN (SELECT trace_id FROM _new_traces)"
                        )
                finally:
                    con.execute("DROP TABLE _new_traces")
            return len(new)
        finally:
            con.execute("DETACH base")


def _sql_str(s: str) -> str:
    return "'" + s.replace("'", "''") + "'"
