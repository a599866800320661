"""Checks on how the run went: finished, budget."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kit.checks.limits import NotRecorded, measured
from kit.checks.registry import check
from kit.result import Verdict

if TYPE_CHECKING:  # hints resolved by the registry when parameters are first parsed
    from kit.checks.params import Amount, Count
    from kit.trace import Trace


@check("finished")
def finished(trace: Trace) -> Verdict:
    """Passes when the run ended by the finish action (`finish_reason` is `finish`); it takes no parameters."""
    if trace.finish_reason == "finish":
        return Verdict(True)
    how = trace.finish_reason or "no finish_reason"
    return Verdict(False, f"run ended by {how}, not by the finish action")


BUDGET_KEYS = ("steps", "tool_calls", "tokens", "cost_usd", "latency_ms")


def _validate_budget(params: dict[str, Any]) -> None:
    if all(params[k] is None for k in BUDGET_KEYS):
        raise ValueError(f"give at least one limit: {', '.join(BUDGET_KEYS)}")


@check("budget", validate=_validate_budget)
def budget(
    trace: Trace,
    *,
    steps: Count | None = None,
    tool_calls: Count | None = None,
    tokens: Count | None = None,
    cost_usd: Amount | None = None,
    latency_ms: Amount | None = None,
) -> Verdict:
    """Passes when every given limit holds (the run's figure <= the limit).

    Give at least one limit. A limit on a figure the trace does not record (tokens, cost or latency) is an
    `error`, never a pass, unless another limit is already over (then it fails, naming both).

    Args:
        steps: The most `llm` spans: an integer >= 0. Optional: unset by default (no limit).
        tool_calls: The most tool calls that ran: an integer >= 0. Optional: unset by default (no limit).
        tokens: The most tokens, summed over spans (tokens_in + tokens_out): an integer >= 0. Optional:
            unset by default (no limit).
        cost_usd: The most cost in US dollars, summed over spans: a number >= 0 (`.inf` for none).
            Optional: unset by default (no limit).
        latency_ms: The most wall time in milliseconds: the trace's `latency_ms`, else the sum over spans;
            a number >= 0 (`.inf` for none). Optional: unset by default (no limit).
    """
    limits = {
        "steps": steps,
        "tool_calls": tool_calls,
        "tokens": tokens,
        "cost_usd": cost_usd,
        "latency_ms": latency_ms,
    }
    over, within, missing = [], [], []
    for key, limit in limits.items():
        if limit is None:
            continue
        try:
            got = measured(trace, key)
        except NotRecorded as e:
            missing.append(str(e))
            continue
        text = f"{key} {got:g}"
        if got > limit:
            over.append(f"{text}, at most {limit:g} allowed")
        else:
            within.append(f"{text} <= {limit:g}")
    if over:
        return Verdict(False, "; ".join(over + missing))
    if missing:  # nothing over, but a limit could not be checked: an error, never a pass
        raise NotRecorded("; ".join(missing))
    return Verdict(True, "; ".join(within))
