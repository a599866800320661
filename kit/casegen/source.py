"""Where the production trace comes from: a file in any format `kit import` reads, or a run's attempt in the
store (a named case and attempt, else the run's first failing attempt). Bad input is a KitInputError naming
the file, the run or the case."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.errors import KitInputError


@dataclass(frozen=True)
class Source:
    """One trace (a contract dict, validated), where it came from in words (`origin`), and, for a file, the
    file and its format (the model's recordings are read from the export's own spans)."""

    trace: dict[str, Any]
    origin: str
    file: Path | None = None
    fmt: str | None = None
    stored: dict[str, Any] = field(default_factory=dict)  # run_id, case_id, attempt, outcome of a stored run


def from_file(path: Path, fmt: str | None = None, *, case: str | None = None, attempt: int | None = None) -> Source:
    """The one trace of `path` (or the one of case `case`, attempt `attempt`, among several)."""
    from kit.importers import import_files

    if not path.exists():
        raise KitInputError("no such trace file", file=str(path))
    if not path.is_file():
        raise KitInputError("not a file: give a trace file (or --run for the store)", file=str(path))
    try:
        traces = import_files([path], fmt)
    except OSError as e:
        raise KitInputError(f"cannot read it: {e.strerror or e}", file=str(path)) from None
    except UnicodeDecodeError as e:
        raise KitInputError(f"not valid UTF-8 ({e.reason} at byte {e.start})", file=str(path)) from None
    except RecursionError:
        raise KitInputError("nested too deeply to read", file=str(path)) from None
    chosen = [
        t
        for t in traces
        if (case is None or t.get("case_id") == case) and (attempt is None or t.get("attempt", 0) == attempt)
    ]
    if not chosen:
        want = " and ".join(x for x in (case and f"case {case!r}", attempt is not None and f"attempt {attempt}") if x)
        raise KitInputError(f"no trace of {want} in the file ({len(traces)} traces)", file=str(path))
    if len(chosen) > 1:
        ids = ", ".join(f"{t.get('case_id')}#{t.get('attempt', 0)}" for t in chosen[:5])
        raise KitInputError(
            f"the file holds {len(chosen)} traces ({ids}{', ...' if len(chosen) > 5 else ''}): choose one with "
            "--case ID and --attempt N",
            file=str(path),
        )
    t = chosen[0]
    detected = fmt or _format(t)
    return Source(t, f"{path} ({t.get('source_format') or detected})", path.resolve(), detected)


def _format(trace: dict[str, Any]) -> str:
    """The format a trace was read from, as the importers mark it."""
    mark = str(trace.get("source_format") or "")
    return "otel" if mark.startswith("otel") else (mark or "trace")


def from_store(store_path: Path, run: str, *, case: str | None, attempt: int | None) -> Source:
    """A stored attempt: of `case` (its `attempt`, else its first failing attempt, else its first), else the
    run's first failing attempt (by case and attempt)."""
    from kit.store import open_store
    from kit.store import queries as q

    if not store_path.is_file():
        raise KitInputError("no such store: run the suite first (`kit run`, `make evals`)", file=str(store_path))
    with open_store(store_path).connect() as con:
        try:
            run_id = q.resolve_run(con, run)
        except q.RunNotFound as e:
            raise KitInputError(str(e), file=str(store_path)) from None
        rows = q.recorded_runs(con, [run_id])
    if case is not None:
        rows = [r for r in rows if r["case_id"] == case]
        if not rows:
            raise KitInputError(f"run {run_id} has no attempt of this case", file=str(store_path), case=case)
    if attempt is not None:
        rows = [r for r in rows if r["attempt"] == attempt]
        if not rows:
            raise KitInputError(f"run {run_id} has no attempt {attempt}", file=str(store_path), case=case)
    with_trace = [r for r in rows if r.get("trace")]
    failing = [r for r in with_trace if r.get("outcome") == "fail"]
    pick = (failing or (with_trace if case is not None else []))[:1]
    if not pick:
        what = "no failing attempt with a trace" if case is None else "no attempt with a trace"
        raise KitInputError(
            f"run {run_id} has {what}: name one with --case ID [--attempt N]", file=str(store_path), case=case
        )
    row = pick[0]
    try:
        trace = json.loads(row["trace"])
    except ValueError as e:
        raise KitInputError(f"run {run_id}: its stored trace is not JSON ({e})", case=row["case_id"]) from None
    if not isinstance(trace, dict):
        raise KitInputError(f"run {run_id}: its stored trace is not an object", case=row["case_id"])
    stored = {"run_id": run_id, "case_id": row["case_id"], "attempt": row["attempt"], "outcome": row["outcome"]}
    origin = f"run {run_id}, case {row['case_id']}, attempt {row['attempt']} ({row['outcome']})"
    return Source(trace, origin, stored=stored)


def from_production(store_path: Path, trace_id: str) -> Source:
    """A production trace `kit serve` judged (`production_traces`): the trace it kept, which is a failing one's
    (a passing trace's spans are not kept)."""
    from kit.store import open_store
    from kit.store import production as prod

    if not store_path.is_file():
        raise KitInputError("no such store: `kit serve` writes production traces to it", file=str(store_path))
    wanted = trace_id.strip().lower()
    with open_store(store_path).connect() as con:
        if not prod.has_production(con):
            raise KitInputError("the store holds no production trace (`kit serve` writes them)", file=str(store_path))
        row = con.execute(
            "SELECT trace, passed, outcome, error FROM production_traces WHERE lower(trace_id) = ?", [wanted]
        ).fetchone()
    if row is None:
        raise KitInputError(f"no production trace {trace_id!r} in the store", file=str(store_path))
    raw, passed, outcome, error = row
    if raw is None:
        why = (
            "it passed, and a passing trace is not kept"
            if passed
            else f"it was not read ({outcome}: {error})"
            if error
            else f"it was judged {outcome} and no trace was kept"
        )
        raise KitInputError(f"production trace {wanted}: no trace to make a case of: {why}", file=str(store_path))
    try:
        trace = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError as e:
        raise KitInputError(f"production trace {wanted}: its stored trace is not JSON ({e})") from None
    if not isinstance(trace, dict):
        raise KitInputError(f"production trace {wanted}: its stored trace is not an object")
    return Source(trace, f"production trace {wanted} ({outcome})", stored={"trace_id": wanted, "outcome": outcome})
