"""Run once, judge everywhere: the runs of one suite run, written as they land and read back by the other
front ends, which then judge the same traces instead of calling the agent again.

A recorded-runs file is JSON Lines, one object per (case, attempt):

    {"case_id": "...", "attempt": 0, "trace": {...}}              the agent's trace
    {"case_id": "...", "attempt": 0, "error": "the agent raised ..."}
    {"case_id": "...", "attempt": 0, "skipped": "no user model ..."}

`kit run --save-runs FILE` writes it; `make evals` hands it to DeepEval and the Promptfoo eval through the
`replay_runs` setting (KIT_REPLAY_RUNS). A case or attempt missing from the file is an error run naming
the file, never a pass.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from kit.case import Case
from kit.errors import KitInputError
from kit.evaluate import error_run, evaluate
from kit.result import CaseRun
from kit.runner.invoke import Invocation
from kit.trace import parse_trace


@dataclass(frozen=True)
class Recorded:
    """One recorded run: a trace dict, or why there is none."""

    trace: dict[str, Any] | None = None
    error: str | None = None
    skipped: str | None = None


class RunsWriter:
    """Appends each run as it lands (thread-safe), flushed line by line so a killed run keeps what it had."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path).resolve()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._f: IO[bytes] = self.path.open("wb")
        self._lock = threading.Lock()

    def add(self, inv: Invocation) -> None:
        cr = inv.case_run
        line: dict[str, Any] = {"case_id": cr.case_id, "attempt": cr.attempt}
        if cr.skipped is not None:
            line["skipped"] = cr.skipped
        elif inv.trace is None:
            line["error"] = cr.error or "no trace"
        else:
            line["trace"] = inv.trace
        data = orjson.dumps(line, default=str) + b"\n"
        with self._lock:
            self._f.write(data)
            self._f.flush()

    def close(self) -> None:
        with self._lock:
            self._f.close()


def write_rows(path: str | Path, rows: list[dict[str, Any]]) -> int:
    """A recorded-runs file from stored case runs (kit.store.queries.recorded_runs: merged CI shards, say).
    Returns how many runs it holds."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("wb") as f:
        for r in rows:
            line: dict[str, Any] = {"case_id": r["case_id"], "attempt": r["attempt"]}
            trace = orjson.loads(r["trace"]) if isinstance(r.get("trace"), str) else r.get("trace")
            if r.get("outcome") == "skipped":
                line["skipped"] = r.get("error") or "skipped"
            elif isinstance(trace, dict) and trace.get("spans") is not None and r.get("error") is None:
                line["trace"] = trace
            else:
                line["error"] = r.get("error") or "no trace"
            f.write(orjson.dumps(line, default=str) + b"\n")
    return len(rows)


def load_runs(path: str | Path) -> dict[tuple[str, int], Recorded]:
    """Every run of a recorded-runs file by (case id, attempt), or KitInputError naming the file and line."""
    p = Path(path)
    st = _stat(p)
    return _load(str(p.resolve()), st.st_mtime_ns, st.st_size)


def _stat(p: Path) -> Any:
    try:
        return p.stat()
    except OSError as e:
        raise KitInputError(f"cannot read the recorded runs: {e.strerror}", file=str(p)) from None


@functools.lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int, size: int) -> dict[tuple[str, int], Recorded]:
    out: dict[tuple[str, int], Recorded] = {}
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                row = orjson.loads(raw)
                key = (str(row["case_id"]), int(row["attempt"]))
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                raise KitInputError(f"line {n}: not a recorded run", file=path) from None
            trace = row.get("trace")
            out[key] = Recorded(trace if isinstance(trace, dict) else None, row.get("error"), row.get("skipped"))
    return out


def replay(path: str | Path, case: Case, attempt: int, *, run_id: str | None = None) -> Invocation:
    """The recorded run of this case and attempt, judged by the oracle as `invoke` judges a live one."""
    got = load_runs(path).get((case.id, attempt))
    if got is None:
        cr = error_run(case.id, attempt, f"no recorded run of this case and attempt in {path}", run_id=run_id)
        return Invocation(cr, None)
    if got.skipped is not None:
        return Invocation(CaseRun(case.id, attempt, (), run_id=run_id, skipped=got.skipped), None)
    if got.trace is None:
        return Invocation(error_run(case.id, attempt, got.error or "no trace", run_id=run_id), None)
    trace = dict(got.trace)
    try:
        parsed = parse_trace(trace)
    except KitInputError as e:
        return Invocation(error_run(case.id, attempt, f"recorded trace is malformed: {e.message}", run_id=run_id), None)
    return Invocation(evaluate(parsed, case, run_id=run_id), trace)
