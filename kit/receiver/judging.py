"""What a production trace is judged by, and its verdict as store rows.

A production trace runs no golden case: it is held to the suite's invariants (every bundle of the
invariants file, or the ones named) and to the case-free checks the user lists, gathered into one case,
`production`, and judged by `kit.evaluate.evaluate` as `kit check` judges a case. An invariant check that
reads the run's end state (`end_state`) is left out and said so: a production trace carries no sandbox's
end state. The spans become a trace through the importers (`kit.importers.semconv.build_trace`: the GenAI
conventions, OpenInference, OpenLLMetry), so a trace reads the same here as from `kit import`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.case import Case, CheckSpec, parse_check, read_invariants, unique_labels
from kit.errors import KitInputError
from kit.importers.otlp import OtelSpan

if TYPE_CHECKING:
    from kit.trace import Trace

CASE_ID = "production"
NEEDS_END_STATE = frozenset({"end_state"})
AGENT_ATTRS = ("gen_ai.agent.name", "agent.name")


@dataclass(frozen=True)
class Production:
    """The one case every production trace is held to, and what was left out of it and why."""

    case: Case
    left_out: tuple[str, ...]

    @property
    def labels(self) -> list[str]:
        return [c.label for c in self.case.checks]


def production_case(invariants: Path | None, names: list[str] | None = None, checks: Path | None = None) -> Production:
    """The invariants file's bundles (`names`: only these) and the checks file's checks, as one case. Any
    problem (an invalid bundle, an unknown name, no check at all) is a KitInputError naming it."""
    specs: list[CheckSpec] = []
    left_out: list[str] = []
    if invariants is not None:
        good, bad = read_invariants(invariants)
        wanted = list(names) if names else [*good, *bad]
        for name in wanted:
            if name in bad:
                raise bad[name]
            if name not in good:
                known = ", ".join(sorted(good)) or "none"
                raise KitInputError(f"no invariant {name!r} (known: {known})", file=str(invariants))
            for spec in good[name]:
                if spec.type in NEEDS_END_STATE:
                    left_out.append(f"{name}: {spec.label} (reads the end state, which a production trace lacks)")
                else:
                    specs.append(spec)
    elif names:
        raise KitInputError("--invariant names a bundle, but there is no invariants file (give --invariants FILE)")
    if checks is not None:
        specs += _checks_file(checks)
    if not specs:
        given = [str(p) for p in (invariants, checks) if p is not None]
        raise KitInputError(
            "no check to judge production traces by"
            + (f" (none in {' or '.join(given)})" if given else ": give --invariants FILE or --checks FILE")
        )
    file = str(checks or invariants)
    case = Case(id=CASE_ID, input="", checks=unique_labels(specs, file=file, case=CASE_ID))
    return Production(case, tuple(left_out))


def _checks_file(path: Path) -> list[CheckSpec]:
    """A YAML list of case-free checks (as a case's `checks:`), or a mapping with `checks:`."""
    from kit.yamlio import safe_load

    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise KitInputError(f"cannot read: {e.strerror or e}", file=str(path)) from None
    except Exception as e:  # a YAML error: its first line names where
        raise KitInputError(f"malformed YAML: {str(e).splitlines()[0]}", file=str(path)) from None
    items = data.get("checks") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise KitInputError("expected a non-empty list of checks (or a mapping with `checks:`)", file=str(path))
    return [parse_check(c, file=str(path), case=None, index=i, base_dir=path.parent) for i, c in enumerate(items)]


@dataclass(slots=True)
class Verdict:
    """One trace's rows for the store (`kit.store.production`), and the trace judged (None: unreadable)."""

    trace: dict[str, Any]
    checks: list[dict[str, Any]]
    judged: Trace | None = None


def judge(trace_id: str, spans: list[OtelSpan], production: Production, *, receiver: str, complete: bool) -> Verdict:
    """The trace the spans make, judged; a trace the importers cannot read is an `error` naming why."""
    from kit.evaluate import evaluate
    from kit.importers.semconv import build_trace
    from kit.trace import parse_trace

    spans.sort(key=lambda x: (x.start_ns, -x.end_ns))  # a parent before its first child, as the importer reads
    judged_at = time.time()
    starts = [s.start_ns for s in spans if s.start_ns]
    ends = [s.end_ns for s in spans if s.end_ns]
    row: dict[str, Any] = {
        "trace_id": trace_id,
        "receiver": receiver,
        "service": _service(spans),
        "agent": _first(spans, AGENT_ATTRS),
        "model": None,
        "started_at": min(starts) / 1e9 if starts else None,
        "ended_at": max(ends) / 1e9 if ends else None,
        "judged_at": judged_at,
        "spans": len(spans),
        "complete": complete,
        "error": None,
        "trace": None,
    }
    try:
        data = build_trace(spans, case_id=CASE_ID)
        trace = parse_trace(data, decoded=True)
    except KitInputError as e:
        row.update(passed=False, outcome="error", error=e.message)
        return Verdict(row, [])
    run = evaluate(trace, production.case)
    row.update(model=trace.model, passed=run.passed, outcome=run.outcome, error=run.error)
    if not run.passed:
        row["trace"] = data  # kept to read and to become a regression case; a passing one is not
    checks = [
        {
            "trace_id": trace_id,
            "check": r.name,
            "invariant": spec.invariant,
            "outcome": r.outcome,
            "reason": r.reason or None,
            "judged_at": judged_at,
        }
        for r, spec in zip(run.results, production.case.checks, strict=True)
    ]
    return Verdict(row, checks, trace)


def _service(spans: list[OtelSpan]) -> str | None:
    for s in spans:
        name = s.resource.get("service.name")
        if name not in (None, ""):
            return str(name)
    return None


def _first(spans: list[OtelSpan], keys: tuple[str, ...]) -> str | None:
    for s in spans:
        for k in keys:
            v = s.attrs.get(k)
            if v not in (None, ""):
                return str(v)
    return None
