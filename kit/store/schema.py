"""The store's tables, created and upgraded in place by numbered migrations.

Version 1 is exactly the contract in docs/CONTRACT.md; later versions only add (columns, tables), so a file
written by any older kit opens in a newer one without losing a row.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

from kit import duck
from kit.store.lock import StoreError

if TYPE_CHECKING:
    import duckdb

# Each entry upgrades the file from version i to i+1. Never edit a shipped migration: append a new one.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (  # 1: the contract (docs/CONTRACT.md)
        """CREATE TABLE runs (run_id VARCHAR PRIMARY KEY, source VARCHAR NOT NULL, started_at TIMESTAMP,
             git_sha VARCHAR, agent VARCHAR, model VARCHAR, config_hash VARCHAR)""",
        """CREATE TABLE case_results (run_id VARCHAR NOT NULL, case_id VARCHAR NOT NULL, attempt INTEGER,
             passed BOOLEAN, steps INTEGER, tokens BIGINT, cost_usd DOUBLE, latency_ms DOUBLE, trace JSON)""",
        """CREATE TABLE check_results (run_id VARCHAR NOT NULL, case_id VARCHAR NOT NULL, attempt INTEGER,
             "check" VARCHAR, gate VARCHAR, outcome VARCHAR, score DOUBLE, reason VARCHAR)""",
    ),
    (  # 2: reproducibility, run status, errors, judge calls and the spool bookkeeping
        "ALTER TABLE runs ADD COLUMN kit_version VARCHAR",
        "ALTER TABLE runs ADD COLUMN status VARCHAR DEFAULT 'complete'",
        "ALTER TABLE runs ADD COLUMN finished_at TIMESTAMP",
        "ALTER TABLE runs ADD COLUMN owner VARCHAR",
        "ALTER TABLE runs ADD COLUMN meta JSON",
        "ALTER TABLE case_results ADD COLUMN outcome VARCHAR",
        "ALTER TABLE case_results ADD COLUMN error VARCHAR",
        "ALTER TABLE check_results ADD COLUMN threshold DOUBLE",
        """CREATE TABLE judge_calls (run_id VARCHAR NOT NULL, case_id VARCHAR NOT NULL, attempt INTEGER,
             "check" VARCHAR, judge_model VARCHAR, rubric_hash VARCHAR, prompt VARCHAR, raw_answer VARCHAR,
             score DOUBLE, outcome VARCHAR, recorded_at TIMESTAMP)""",
        # How far each writer's spool file has been merged: committed with the rows it covers.
        "CREATE TABLE spool_offsets (spool VARCHAR PRIMARY KEY, merged_bytes BIGINT NOT NULL)",
    ),
    (  # 3: a check that raised keeps its stack trace beside its one-line reason
        "ALTER TABLE check_results ADD COLUMN traceback VARCHAR",
    ),
    (  # 4: records the merger could not keep, and what it needs to notice a spool cut under its writer
        """CREATE TABLE quarantine (quarantined_at TIMESTAMP, spool VARCHAR, line BIGINT, run_id VARCHAR,
             problem VARCHAR, record VARCHAR)""",
        "ALTER TABLE spool_offsets ADD COLUMN merged_lines BIGINT",
        "ALTER TABLE spool_offsets ADD COLUMN merged_seq BIGINT",
    ),
    (  # 5: what a run is (golden eval, red team, control) and which `make evals` it belongs to
        "ALTER TABLE runs ADD COLUMN kind VARCHAR",
        "ALTER TABLE runs ADD COLUMN evals_id VARCHAR",
    ),
    (  # 6: what each judge call cost, which of K samples it was, and the calibrations of the rubrics
        "ALTER TABLE judge_calls ADD COLUMN prompt_tokens BIGINT",
        "ALTER TABLE judge_calls ADD COLUMN completion_tokens BIGINT",
        "ALTER TABLE judge_calls ADD COLUMN cost_usd DOUBLE",
        "ALTER TABLE judge_calls ADD COLUMN latency_ms DOUBLE",
        "ALTER TABLE judge_calls ADD COLUMN sample INTEGER",
        "ALTER TABLE judge_calls ADD COLUMN reason VARCHAR",
        "ALTER TABLE judge_calls ADD COLUMN error VARCHAR",
        # One row per rubric per `kit calibrate`: how far the judge agreed with people on labelled answers.
        """CREATE TABLE calibrations (calibration_id VARCHAR NOT NULL, calibrated_at TIMESTAMP, rubric VARCHAR,
             rubric_hash VARCHAR, judge_model VARCHAR, samples INTEGER, n INTEGER, agreement DOUBLE,
             kappa DOUBLE, consistency DOUBLE, labels_file VARCHAR)""",
    ),
    (  # 7: what each run cost in calls and time: calls made to the agent (rate-limit retries included),
        # the retries, the seconds spent waiting on the agent and the kit's own seconds on the run
        "ALTER TABLE case_results ADD COLUMN agent_calls INTEGER",
        "ALTER TABLE case_results ADD COLUMN retries INTEGER",
        "ALTER TABLE case_results ADD COLUMN agent_s DOUBLE",
        "ALTER TABLE case_results ADD COLUMN kit_s DOUBLE",
    ),
    (  # 8: the rules a run ran under (kit.gate.rules.RunRules: case floors and runs, case files and their
        # sha256, cases that did not load, the gate policy), so it is judged by them and not by files read later
        "ALTER TABLE runs ADD COLUMN rules JSON",
    ),
    (  # 9: production traces judged as they arrive (`kit serve`, source `production`): one row per trace,
        # keyed by its OpenTelemetry trace id, and one per check of it; the trace itself kept when it failed
        """CREATE TABLE production_traces (trace_id VARCHAR NOT NULL, receiver VARCHAR, service VARCHAR,
             agent VARCHAR, model VARCHAR, started_at TIMESTAMP, ended_at TIMESTAMP, judged_at TIMESTAMP,
             passed BOOLEAN, outcome VARCHAR, error VARCHAR, spans INTEGER, complete BOOLEAN, trace JSON)""",
        """CREATE TABLE production_checks (trace_id VARCHAR NOT NULL, "check" VARCHAR, invariant VARCHAR,
             outcome VARCHAR, reason VARCHAR, judged_at TIMESTAMP)""",
    ),
)

LATEST = len(MIGRATIONS)


class NewerSchemaError(StoreError):
    """The file was written by a newer kit: reading it could misread columns this kit does not know."""

    def __init__(self, found: int, file: str | None = None) -> None:
        super().__init__(
            f"store schema version {found} found, this kit expects version {LATEST} or older: upgrade the kit "
            "(or use another store)",
            file=file,
        )
        self.found = found


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    exists = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
    ).fetchone()
    if not exists or not exists[0]:
        return 0
    row = con.execute("SELECT max(version) FROM schema_version").fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def migrate(con: duckdb.DuckDBPyConnection, target: int = LATEST) -> int:
    """Bring the file up to `target` (default: latest), one transaction per step. Returns the version."""
    version = current_version(con)
    if version > LATEST:
        raise NewerSchemaError(version)
    if version == 0:
        con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER, applied_at TIMESTAMP)")
    while version < target:
        con.execute("BEGIN TRANSACTION")
        try:
            for statement in MIGRATIONS[version]:
                con.execute(statement)
            version += 1
            con.execute("INSERT INTO schema_version VALUES (?, now())", [version])
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    return version


@cache
def columns(table: str) -> tuple[tuple[str, str], ...]:
    """`(name, type)` of every column of a table at the latest version, in order: read from the migrations
    themselves (applied to an empty in-memory database), so no second copy of the schema can drift."""
    con = duck.connect()
    try:
        migrate(con)
        found = con.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_name = ? "
            "ORDER BY ordinal_position",
            [table],
        ).fetchall()
    finally:
        con.close()
    if not found:
        raise KeyError(f"the store has no table {table!r}")
    return tuple((name, kind) for name, kind in found)
