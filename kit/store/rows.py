"""One run of one case as table rows: the only place a CaseRun becomes `case_results` and `check_results`
rows. The store's spool and the runner's shard files both write what this returns, so a result reads the
same whichever way it reached the store.

Every row has exactly the columns of its table at the latest schema version (`kit.store.schema`);
JSON columns hold Python values (dicts), which each writer encodes as it needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from kit.result import CaseRun
from kit.store.schema import columns

Gate = Literal["hard", "soft"]
# What a run is: the golden suite, a red team, or a control (a deliberately vulnerable target that must
# fail). Baselines, `latest`/`previous`, comparisons and the summary pair only runs of one kind.
RunKind = Literal["golden", "redteam", "control"]
KEY = ("run_id", "case_id", "attempt")
METRICS = ("steps", "tokens", "cost_usd", "latency_ms")
# What the run cost in calls and time, as the runner measured it (kit.runner.invoke.judge puts them in the
# CaseRun's metrics); None for a result that did not come through a runner.
CALLS = ("agent_calls", "retries", "agent_s", "kit_s")


def trace_dict(trace: Any) -> dict[str, Any] | None:
    """A trace as the JSON object the store keeps: a dict as is, a `kit.trace.Trace` dumped."""
    if trace is None:
        return None
    if isinstance(trace, Mapping):
        return dict(trace)
    dump = getattr(trace, "model_dump", None)
    if dump is not None:
        return dump(mode="json")
    raise TypeError(f"trace must be a dict or a kit.trace.Trace, not {type(trace).__name__}")


def metrics(case_run: CaseRun, trace: Any) -> dict[str, Any]:
    """steps/tokens/cost/latency: from the CaseRun's metrics, else derived from the trace."""
    found = dict(case_run.metrics or {})
    if trace is not None and not all(k in found for k in METRICS):
        totals = getattr(trace, "totals", None)
        if totals is None and isinstance(trace, Mapping):
            try:
                from kit.trace import parse_trace

                totals = parse_trace(trace).totals
            except Exception:  # a malformed trace still gets stored; only its figures are missing
                totals = None
        for k in METRICS:
            if totals and k not in found:
                found[k] = totals.get(k)
    if trace is not None and found.get("cost_usd") == 0 and not _cost_given(trace):
        found["cost_usd"] = None  # no span gives a cost: not recorded, never a 0 nobody measured
    if trace is not None and found.get("cost_usd") is not None and _unpriced(trace):
        found["cost_usd"] = None  # a call of unknown price: the priced calls' sum is not the run's cost
    return {k: found.get(k) for k in METRICS}


def _unpriced(trace: Any) -> bool:
    from kit.pricing import unpriced_calls

    return bool(unpriced_calls(trace.get("spans") if isinstance(trace, Mapping) else getattr(trace, "spans", [])))


def _cost_given(trace: Any) -> bool:
    spans = trace.get("spans") if isinstance(trace, Mapping) else [vars(s) for s in getattr(trace, "spans", [])]
    return any(
        isinstance(s, Mapping) and s.get("cost_usd") is not None and (s.get("cost_usd") != 0 or s.get("kind") == "llm")
        for s in spans or []
    )


def shaped(table: str, values: Mapping[str, Any]) -> dict[str, Any]:
    """`values` as a row of `table`: every column of the schema, in order; a key the table lacks is a bug."""
    names = [name for name, _ in columns(table)]
    unknown = set(values) - set(names)
    if unknown:
        raise KeyError(f"{table} has no column {', '.join(sorted(unknown))}")
    return {name: values.get(name) for name in names}


def case_rows(run_id: str, case_run: CaseRun, trace: Any, gate: Gate = "hard") -> dict[str, list[dict[str, Any]]]:
    """The rows one run of one case adds. `gate="hard"`: its case_results row (passed = every hard check
    passed) and its check rows. `gate="soft"`: only check rows, marked soft (e.g. a DeepEval G-Eval
    metric's verdict), so the case's hard verdict recorded elsewhere is not duplicated."""
    if gate not in ("hard", "soft"):
        raise ValueError(f"gate must be 'hard' or 'soft', not {gate!r}")
    key = {"run_id": run_id, "case_id": case_run.case_id, "attempt": case_run.attempt}
    checks = [
        {
            **key,
            "check": r.name,
            "gate": gate,
            "outcome": r.outcome,
            "score": r.score,
            "reason": r.reason,
            "traceback": getattr(r, "traceback", None),
        }
        for r in case_run.results
    ]
    if case_run.error is not None and gate == "hard":
        # An infrastructure error is kept as a row of its own, so reports can show it.
        infra = {"check": "infrastructure", "gate": "hard", "outcome": "error", "score": None}
        checks.append({**key, **infra, "reason": case_run.error})
    skipped = getattr(case_run, "skipped", None)
    if skipped is not None and gate == "hard":
        # A run that could not take place (a simulated user with no user model): its reason, never a pass.
        checks.append(
            {**key, "check": "simulated_user", "gate": "hard", "outcome": "skipped", "score": None, "reason": skipped}
        )
    cases = []
    if gate == "hard":
        cases.append(
            {
                **key,
                "passed": case_run.passed,
                **metrics(case_run, trace),
                **{k: (case_run.metrics or {}).get(k) for k in CALLS},
                "trace": trace_dict(trace),
                "outcome": case_run.outcome,
                "error": case_run.error,
            }
        )
    return {
        "case_results": [shaped("case_results", r) for r in cases],
        "check_results": [shaped("check_results", r) for r in checks],
    }
