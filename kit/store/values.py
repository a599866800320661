"""Every journal event checked against the store's column types before it is written, and again before it
is merged: what DuckDB would refuse must never reach it, or one record would wedge every later merge.

`normalise_event` fixes what can be fixed without changing a verdict (a lone surrogate becomes U+FFFD, a
figure out of its column's range or not a number becomes NULL, a bad timestamp becomes NULL) and raises
`BadRecord`, naming the field, for what cannot: an event without its type, run, case or a usable attempt.
`encode_line` turns an event into one spool line (UTF-8, no NaN), cleaning the values only when needed.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from kit.store.schema import columns

EVENT_TYPES = ("run", "case", "case_soft", "check", "finish", "judge")
KEY = ("run_id", "case_id", "attempt")

# Every key an event may carry, with its type: DuckDB reads all spool lines in one pass with this.
EVENT_COLUMNS: dict[str, str] = {
    "t": "VARCHAR",
    "seq": "BIGINT",  # the writer's line number in its spool: gaps show lost records
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
    "rules": "JSON",  # kit.gate.rules.RunRules of a run event
    "kind": "VARCHAR",
    "evals_id": "VARCHAR",
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
    "agent_calls": "INTEGER",  # a run's calls to the agent, retries and seconds (kit.store.rows.CALLS)
    "retries": "INTEGER",
    "agent_s": "DOUBLE",
    "kit_s": "DOUBLE",
    "trace": "JSON",
    "checks": "CHECKS",  # a case event's check rows (kit.store.rows.case_rows)
    "check": "VARCHAR",
    "gate": "VARCHAR",
    "score": "DOUBLE",
    "threshold": "DOUBLE",
    "reason": "VARCHAR",
    "judge_model": "VARCHAR",
    "rubric_hash": "VARCHAR",
    "prompt": "VARCHAR",
    "raw_answer": "VARCHAR",
    "prompt_tokens": "BIGINT",  # a judge call's usage, as its endpoint reported it
    "completion_tokens": "BIGINT",
    "sample": "INTEGER",  # which of a verdict's K judge samples
}


@cache
def check_fields() -> dict[str, str]:
    """The columns of a check row, with their types. Read on first use, not at import: reading them applies
    the migrations to an in-memory database (~50 ms), which every process importing the store would pay."""
    return {c: t for c, t in columns("check_results") if c not in KEY}


_RANGES = {"INTEGER": (-(2**31), 2**31 - 1), "BIGINT": (-(2**63), 2**63 - 1)}
_SURROGATE = re.compile("[\ud800-\udfff]")


class BadRecord(ValueError):
    """An event the store cannot keep: the message names the field and the value."""


def text(s: str) -> str:
    """`s` as valid UTF-8: a lone surrogate (which JSON allows and DuckDB refuses) becomes U+FFFD."""
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", s)
    return s


def plain(value: Any) -> Any:
    """A JSON value DuckDB accepts: strings cleaned (keys too), NaN and infinities as null."""
    if isinstance(value, str):
        return text(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {text(str(k)): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False, default=str).encode


def encode_line(event: Mapping[str, Any]) -> bytes:
    """One spool line. The common case costs one encode; a value DuckDB would refuse costs a second."""
    try:
        return _dumps(event).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return _dumps(plain(event)).encode("utf-8")


def _short(value: Any) -> str:
    r = repr(value)
    return r if len(r) <= 60 else r[:57] + "..."


def _value(name: str, kind: str, value: Any, *, required: bool = False) -> Any:
    """`value` as a column of type `kind`: fixed when it can be, None when it cannot (BadRecord if required)."""
    if value is None:
        if required:
            raise BadRecord(f"{name}: missing")
        return None
    fixed: Any = None
    if kind == "VARCHAR":
        fixed = text(value) if isinstance(value, str) else None
        if fixed is None and not isinstance(value, Mapping | list) and not required:
            fixed = text(str(value))
    elif kind in _RANGES:
        lo, hi = _RANGES[kind]
        if isinstance(value, bool):
            fixed = int(value)
        elif isinstance(value, int):
            fixed = value if lo <= value <= hi else None
        elif isinstance(value, float) and math.isfinite(value) and value.is_integer() and lo <= value <= hi:
            fixed = int(value)
    elif kind == "DOUBLE":
        if isinstance(value, bool | int | float):
            try:
                fixed = float(value)
            except OverflowError:
                fixed = None
            if fixed is not None and not math.isfinite(fixed):
                fixed = None
    elif kind == "BOOLEAN":
        fixed = value if isinstance(value, bool) else None
    elif kind == "TIMESTAMP":
        fixed = _timestamp(value)
    elif kind == "JSON":
        return value  # cleaned by encode_line, and only when it has to be: traces can be large
    if fixed is None and required:
        raise BadRecord(f"{name}: {_short(value)} is not a valid {kind.lower()}")
    return fixed


def now() -> str:
    """The current time as the store keeps it: naive UTC, ISO 8601, microseconds."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(timespec="microseconds")


def timestamp(value: Any) -> str | None:
    """An ISO 8601 timestamp as naive UTC (DuckDB's TIMESTAMP), whatever offset it has; None if it is not one."""
    return _timestamp(value)


def _timestamp(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    return t.isoformat(timespec="microseconds")


def normalise_event(event: Any) -> dict[str, Any]:
    """The event with every value fit for its column; BadRecord (naming the field) when it cannot be kept."""
    if not isinstance(event, Mapping):
        raise BadRecord(f"not a JSON object but {type(event).__name__}")
    kind = event.get("t")
    if kind not in EVENT_TYPES:
        raise BadRecord(f"t: {_short(kind)} is not an event type ({', '.join(EVENT_TYPES)})")
    required = {"run_id"}
    if kind == "run":
        required.add("source")
    if kind in ("case", "case_soft", "check", "judge"):
        required |= {"case_id", "attempt"}
    out: dict[str, Any] = {}
    for name, value in event.items():
        col = EVENT_COLUMNS.get(name)
        if col is None:
            continue  # an unknown key is not read by the merger: dropping it changes nothing
        if col == "CHECKS":
            out[name] = _checks(value)
        else:
            out[name] = _value(name, col, value, required=name in required)
    missing = sorted(required - {k for k, v in out.items() if v is not None})
    if missing:
        raise BadRecord(f"{missing[0]}: missing")
    if not out["run_id"] or (kind in ("case", "case_soft", "check", "judge") and not out["case_id"]):
        raise BadRecord("run_id and case_id must not be empty")
    if kind == "check":
        out["outcome"] = _outcome(out.get("outcome"))
    return out


def _outcome(value: Any) -> str:
    if value not in ("pass", "fail", "skipped", "error"):
        raise BadRecord(f"outcome: {_short(value)} is not pass, fail, skipped or error")
    return value


def _checks(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise BadRecord(f"checks: {_short(value)} is not a list")
    rows = []
    for i, row in enumerate(value):
        if not isinstance(row, Mapping):
            raise BadRecord(f"checks.{i}: {_short(row)} is not an object")
        rows.append({c: _value(f"checks.{i}.{c}", t, row.get(c)) for c, t in check_fields().items()})
        _outcome(rows[-1]["outcome"])
    return rows
