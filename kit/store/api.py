"""The store's Python API: start a run, record results from any number of processes, finish it, query."""

from __future__ import annotations

import contextlib
import datetime as dt
import errno
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal, Protocol

import duckdb

from kit import duck
from kit.judge import JudgeCall
from kit.result import CaseRun
from kit.store import lock
from kit.store.lock import StoreError
from kit.store.merge import merge_spools
from kit.store.rows import KEY, Gate, RunKind, case_rows, shaped
from kit.store.schema import NewerSchemaError, migrate
from kit.store.spool import SpoolWriter, process_identity, spool_dir
from kit.store.values import normalise_event, now, timestamp

DEFAULT_PATH = Path(".kit/evals.duckdb")
_FULL = {errno.ENOSPC, errno.EDQUOT, errno.EFBIG}


def _first_line(e: BaseException) -> str:
    return (str(e).strip().splitlines() or [type(e).__name__])[0][:300]


def _open(path: Path) -> duckdb.DuckDBPyConnection:
    try:
        return lock.connect(path)
    except duckdb.Error as e:
        why = duck.foreign_file(path) or _first_line(e)
        raise StoreError(f"not a readable DuckDB store: {why}", file=str(path)) from None
    except OSError as e:
        raise StoreError(f"cannot be opened: {e.strerror or e}", file=str(path)) from None


def _read_only_mount(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


SOURCES = ("kit", "deepeval", "promptfoo")


def open_store(path: str | os.PathLike[str]) -> Store:
    """The store at `path` (a command's --store, else its plan's `store`)."""
    return Store(Path(path))


def _iso_utc(stamp: str) -> str:
    """An ISO timestamp as naive UTC (DuckDB's TIMESTAMP), whatever offset it was written with; now when
    it is not a timestamp (an ingested file's own field, say)."""
    return timestamp(stamp) or now()


def current_git_sha(cwd: str | os.PathLike[str] | None = None) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def new_run_id(source: str) -> str:
    """Sortable by time and readable: 20250130T025212-kit-1a2b3c."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}-{source}-{uuid.uuid4().hex[:6]}"


class _Rules(Protocol):
    """A run's rules as the store keeps them (kit.gate.rules.RunRules; the gate reads the store, so the store
    does not import the gate)."""

    def to_dict(self) -> dict[str, Any]: ...


def _labelled_control(*labels: str | None) -> bool:
    return any(str(label or "").startswith("control-") for label in labels)


class Store:
    """One DuckDB file plus the spool folder beside it.

    Writing methods (`start_run`, `record`, `record_soft`, `finish_run`) only append to this process's
    spool and never wait for a lock; reading (`connect`) takes the store lock, merges the spools and hands
    out a DuckDB connection.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.spool = spool_dir(self.path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._writer = SpoolWriter(self.spool)
        self._noted = False

    # -- writing ---------------------------------------------------------------------------------
    def _write(self, event: dict[str, Any]) -> None:
        """Checked against the column types first (`kit.store.values`): a value DuckDB would refuse is
        fixed or refused here (ValueError naming the field), never left to wedge a later merge."""
        self._writer.write(normalise_event(event))

    def start_run(
        self,
        source: str,
        *,
        agent: str | None = None,
        model: str | None = None,
        config_hash: str | None = None,
        git_sha: str | Literal["auto"] | None = "auto",
        run_id: str | None = None,
        meta: dict[str, Any] | None = None,
        detached: bool = False,
        started_at: str | None = None,
        kind: RunKind | None = None,
        evals_id: str | None = None,
        rules: _Rules | Mapping[str, Any] | None = None,
    ) -> str:
        """Record a new run and return its id.

        The run belongs to this process: if it dies before `finish_run`, the run is marked `incomplete`.
        `detached=True` for a run that other processes will finish (it stays `running` until then).
        `started_at` (ISO 8601, UTC) for results produced earlier, e.g. an ingested file's own timestamp.
        `kind`: a golden eval, a red team or a control (a deliberately vulnerable target); baselines and
        comparisons pair only runs of one kind; unset, a `control-…` model or agent is a control, anything
        else a golden eval. `evals_id`: the `make evals` this run belongs to (each front
        end passes its plan's, `Plan.evals_id`; None: none). `rules`: what the run is held to
        (a `kit.gate.rules.RunRules`, from `run_rules`): the gate judges it by these, not by the files as
        they are later.
        """
        from kit import __version__

        run_id = run_id or new_run_id(source)
        sha = current_git_sha() if git_sha == "auto" else git_sha
        self._write(
            {
                "t": "run",
                "ts": now(),
                "run_id": run_id,
                "source": source,
                "started_at": _iso_utc(started_at) if started_at else now(),
                "git_sha": sha,
                "agent": agent,
                "model": model,
                "config_hash": config_hash,
                "kit_version": __version__,
                "status": "running",
                "owner": None if detached else process_identity(),
                "meta": meta,
                "kind": kind or ("control" if _labelled_control(agent, model) else "golden"),
                "evals_id": evals_id or None,
                "rules": rules if rules is None or isinstance(rules, Mapping) else rules.to_dict(),
            }
        )
        return run_id

    def record(self, run_id: str, case_run: CaseRun, trace: Any = None, gate: Gate = "hard") -> None:
        """Record one run of one case: the rows of `kit.store.rows.case_rows`.

        `gate="hard"`: a case_results row (passed = every hard check passed) and its check rows.
        `gate="soft"`: only check rows, marked soft (e.g. a DeepEval G-Eval metric's verdict), so the
        case's hard verdict recorded elsewhere is not duplicated.
        """
        self._write(self.case_event(run_id, case_run, trace, gate))

    def record_many(self, run_id: str, case_runs: list[tuple[CaseRun, Any]], gate: Gate = "hard") -> None:
        """Several results in one write (a runner that batches saves a syscall per result)."""
        ts = now()
        self._writer.write_many([normalise_event(self.case_event(run_id, cr, tr, gate, ts)) for cr, tr in case_runs])

    def case_event(
        self, run_id: str, case_run: CaseRun, trace: Any, gate: Gate, ts: str | None = None
    ) -> dict[str, Any]:
        """One spool line carrying `case_rows`: the case row's columns, and its check rows under `checks`."""
        tables = case_rows(run_id, case_run, trace, gate)
        checks = [{k: v for k, v in r.items() if k not in KEY} for r in tables["check_results"]]
        if gate == "soft":
            key = {"run_id": run_id, "case_id": case_run.case_id, "attempt": case_run.attempt}
            return {"t": "case_soft", "ts": ts or now(), **key, "checks": checks}
        return {"t": "case", "ts": ts or now(), **tables["case_results"][0], "checks": checks}

    def record_soft(
        self,
        run_id: str,
        case_id: str,
        attempt: int,
        check: str,
        *,
        outcome: Literal["pass", "fail", "skipped", "error"],
        score: float | None = None,
        threshold: float | None = None,
        reason: str = "",
        judge_model: str | None = None,
        rubric_hash: str | None = None,
        raw_answer: str | None = None,
        prompt: str | None = None,
        calls: Sequence[JudgeCall] | None = None,
    ) -> None:
        """A judged (soft-gate) verdict, with the judge call that produced it.

        A soft gate with no judge model configured is `skipped` (with the reason), never a pass.
        `calls`: every judge call behind the verdict (its K samples, drafted steps), each a `judge_calls` row
        with its tokens; without them, the one call the judge fields describe is that row.
        """
        if outcome not in ("pass", "fail", "skipped", "error"):
            raise ValueError(f"outcome must be pass/fail/skipped/error, not {outcome!r}")
        judged = {"judge_model": judge_model, "raw_answer": raw_answer, "prompt": prompt} if calls is None else {}
        self._write(
            {
                "t": "check",
                "ts": now(),
                "run_id": run_id,
                "case_id": case_id,
                "attempt": attempt,
                "check": check,
                "gate": "soft",
                "outcome": outcome,
                "score": score,
                "threshold": threshold,
                "reason": reason,
                "rubric_hash": rubric_hash,
                **judged,
            }
        )
        if calls:
            self.record_judge_calls(run_id, case_id, attempt, check, rubric_hash, calls)

    def record_judge_calls(
        self, run_id: str, case_id: str, attempt: int, check: str, rubric_hash: str | None, calls: Sequence[JudgeCall]
    ) -> None:
        """Judge calls as `judge_calls` rows (a soft gate's samples, or a calibration's: its id as `run_id`,
        the labelled answer's id as `case_id`)."""
        ts = now()
        key = {"run_id": run_id, "case_id": case_id, "attempt": attempt, "check": check, "rubric_hash": rubric_hash}
        self._writer.write_many([normalise_event({"t": "judge", "ts": ts, **key, **asdict(c)}) for c in calls])

    def record_calibration(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """One `kit calibrate`'s figures, a `calibrations` row per rubric. Written at once under the store
        lock (one command, one write): the report reads it beside each soft gate."""
        shaped_rows = [shaped("calibrations", r) for r in rows]
        if not shaped_rows:
            return
        names = list(shaped_rows[0])
        columns_sql = ", ".join(names)
        with self.connect() as con:
            con.executemany(
                f"INSERT INTO calibrations ({columns_sql}) VALUES ({', '.join('?' for _ in names)})",
                [list(r.values()) for r in shaped_rows],
            )

    def finish_run(
        self,
        run_id: str,
        status: Literal["complete", "incomplete"] = "complete",
        merge: bool = True,
        *,
        model: str | None = None,
    ) -> None:
        """Mark the run finished and (by default) merge the spools so readers see it at once. `model`: the
        model id the traces carried, kept when the run started without one."""
        self._write({"t": "finish", "ts": now(), "run_id": run_id, "status": status, "model": model})
        if merge:
            self.merge()

    # -- reading ---------------------------------------------------------------------------------
    def merge(self) -> int:
        with self.connect(merge=False) as con:
            return merge_spools(con, self.spool)

    @contextlib.contextmanager
    def connect(self, merge: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection to the up-to-date store, held under the store lock: keep the block short.

        A store whose folder cannot be written (a read-only mount, a downloaded artifact) is opened
        read-only, without its lock and without merging. A path that is not a DuckDB store is a
        StoreError naming it."""
        if self.path.is_dir():
            raise StoreError("is a folder, not a store file", file=str(self.path))
        if self._read_only():
            yield from self._connect_read_only()
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create its folder: {e.strerror or e}", file=str(self.path)) from None
        with lock.exclusive(self.lock_path):
            con = _open(self.path)
            try:
                try:
                    migrate(con)
                except NewerSchemaError as e:
                    raise NewerSchemaError(e.found, file=str(self.path)) from None
                except duckdb.Error as e:
                    raise StoreError(f"not a kit store: {_first_line(e)}", file=str(self.path)) from None
                if merge:
                    merge_spools(con, self.spool)
                yield con
            finally:
                con.close()

    def _read_only(self) -> bool:
        """The store exists but neither it nor its lock can be written: read it as it is."""
        folder = self.path.parent
        if not self.path.exists() or not folder.is_dir():
            return False
        if os.access(folder, os.W_OK) and not _read_only_mount(folder):
            return False
        return not self.lock_path.exists() or not os.access(self.lock_path, os.W_OK) or _read_only_mount(folder)

    def _connect_read_only(self) -> Iterator[duckdb.DuckDBPyConnection]:
        try:
            con = duck.connect(str(self.path), read_only=True)
        except duckdb.Error as e:
            why = duck.foreign_file(self.path) or _first_line(e)
            raise StoreError(f"not a readable DuckDB store: {why}", file=str(self.path)) from None
        try:
            from kit.store.schema import LATEST, current_version

            version = current_version(con)
            if version > LATEST:
                raise NewerSchemaError(version, file=str(self.path))
            if version != LATEST:
                raise StoreError(
                    f"read-only store of schema version {version}, this kit reads {LATEST}: open it once where "
                    "it can be written to upgrade it",
                    file=str(self.path),
                )
            self._note_unmerged(con)
            yield con
        finally:
            con.close()

    def _note_unmerged(self, con: duckdb.DuckDBPyConnection) -> None:
        """Say once when a read-only store has spooled results it cannot merge: they are not shown."""
        if self._noted or not self.spool.is_dir():
            return
        merged = dict(con.execute("SELECT spool, merged_bytes FROM spool_offsets").fetchall())
        waiting = [p for p in self.spool.glob("*.jsonl") if p.stat().st_size > merged.get(p.name, 0)]
        if waiting:
            self._noted = True
            print(
                f"kit store: {self.path}: read-only, so {len(waiting)} spool file(s) of newer results are not "
                "merged: what it shows may be missing the latest results",
                file=sys.stderr,
            )

    def check_writable(self, probe_bytes: int = 64 * 1024) -> None:
        """StoreError when the store's disk cannot take results (full, over quota, over a size limit), so
        a gate never passes the previous run because the new one could not be written. A read-only store
        (on purpose: a downloaded artifact) is not an error here."""
        folder = self.spool if self.spool.is_dir() else self.path.parent
        if not folder.is_dir():
            return
        probe = folder / f".probe-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except OSError as e:
            if e.errno in _FULL:
                raise StoreError(f"cannot be written: {e.strerror}", file=str(self.path)) from None
            return
        try:
            os.write(fd, b"\0" * probe_bytes)
            os.fsync(fd)
        except OSError as e:
            if e.errno in _FULL:
                raise StoreError(
                    f"cannot be written ({e.strerror}): results of the latest run may be missing", file=str(self.path)
                ) from None
        finally:
            os.close(fd)
            probe.unlink(missing_ok=True)

    def close(self) -> None:
        self._writer.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
