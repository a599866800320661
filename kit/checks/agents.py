"""Checks on the agents of a run and where its calls went: handoff, allowed_tools, allowed_servers.

Any check takes `agent:` or `server:` (kit.evaluate scopes it); these are the checks that are about agents
and servers themselves."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from kit.checks.registry import check
from kit.checks.tools import Calls, _in_scope, _ok, _times
from kit.result import Verdict

if TYPE_CHECKING:  # hints resolved by the registry when parameters are first parsed
    from typing import Annotated

    from pydantic import Field

    from kit.checks.params import NonEmpty
    from kit.trace import Handoff, Trace

Via = Literal["handoff", "tool", "delegate"]


def _validate_handoff(params: dict[str, Any]) -> None:
    low, high = params["min"], params["max"]
    if low is not None and high is not None and low > high:
        raise ValueError(f"'min' ({low}) is above 'max' ({high}): no run could pass")
    if params["from"] is not None and params["from"] == params["to"]:
        raise ValueError("'from' and 'to' name the same agent: an agent does not hand off to itself")
    if params["before"] is not None and high == 0:
        raise ValueError("'before' needs a handoff, and 'max: 0' forbids every one")


def _who(src: str | None, dst: str | None) -> str:
    if src and dst:
        return f"{src} handed off to {dst}"
    if src:
        return f"{src} handed off"
    if dst:
        return f"handed off to {dst}"
    return "handoffs"


def _unknown(trace: Trace, *names: str | None) -> str | None:
    have = trace.agent_names
    for name in names:
        if name is not None and name not in have:
            known = f"its agents: {', '.join(have)}" if have else "a run of one agent that names none"
            return f"no agent {name} in this run ({known})"
    return None


@check("handoff", label="handoff:{from}>{to}", validate=_validate_handoff)
def handoff(
    trace: Trace,
    *,
    from_: str | None = None,
    to: str | None = None,
    via: Via | None = None,
    min: Annotated[int, Field(ge=0)] | None = None,
    max: Annotated[int, Field(ge=0)] | None = None,
    before: str | None = None,
) -> Verdict:
    """Passes when the handoffs from `from` to `to` number from `min` to `max`, before any call of `before`.

    The first such handoff must come before every call of the tool `before`. A handoff is one agent handing
    control to another, or calling it as a tool (`via`). An agent `from` or `to` names that the run does not
    have fails the check, naming it.

    Args:
        from: The agent handing off. Optional: unset by default (any agent).
        to: The agent handed to. Optional: unset by default (any agent); not the same as `from`.
        via: Only handoffs made this way: `handoff` (control passed), `tool` (an agent called as a tool) or
            `delegate` (an agent run from inside a tool). Optional: unset by default (every way).
        min: The fewest handoffs that pass: an integer >= 0. Optional: unset by default (1, or 0 when `max`
            is given).
        max: The most handoffs that pass: an integer >= 0, not below `min`. Optional: unset by default.
        before: A tool every call of which must come after the first handoff (none called passes this
            part); needs a handoff, so not with `max: 0`. Optional: unset by default.
    """
    unknown = _unknown(trace, from_, to)
    if unknown is not None:
        return Verdict(False, unknown)
    found: list[Handoff] = [
        h
        for h in trace.handoffs
        if (from_ is None or h.from_ == from_) and (to is None or h.to == to) and (via is None or h.via == via)
    ]
    low = min if min is not None else (0 if max is not None else 1)
    who = _who(from_, to)
    n = len(found)
    counted = f"{who} {_times(n)}" if from_ or to else f"{n} handoff{'s' * (n != 1)}"
    if n < low:
        if n == 0:
            never = f"{from_ or 'no agent'} never handed off" + (f" to {to}" if to else "")
            return Verdict(False, never if from_ or not to else f"no agent handed off to {to}")
        return Verdict(False, f"{counted}, at least {low} required")
    if max is not None and n > max:
        return Verdict(False, f"{counted}, at most {max} allowed")
    if before is not None and found:
        first = found[0].at
        for step, (i, s) in enumerate(_calls_at(trace), 1):
            if s.name == before and i < first:
                return Verdict(False, f"{before} (step {step}) called before {who}")
    return Verdict(True, counted)


def _calls_at(trace: Trace) -> list[tuple[int, Any]]:
    """(place among the spans, span) of every tool call that ran, in order."""
    return [(i, s) for i, s in enumerate(trace.spans) if s.kind == "tool" and s.__dict__.get("executed") is not False]


@check("allowed_tools")
def allowed_tools(trace: Trace, *, tools: NonEmpty, calls: Calls = "all") -> Verdict:
    """Passes when every tool call was to a tool of the list.

    Args:
        tools: The tools that may be called: a non-empty list of names. Required.
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    allowed = set(tools)
    outside: dict[str, int] = {}
    for s in _in_scope(trace, calls):
        name = s.name or ""
        if name not in allowed:
            outside[name] = outside.get(name, 0) + 1
    if not outside:
        return Verdict(True)
    shown = "; ".join(f"{t or '(unnamed)'} called{_ok(calls)} {_times(c)}" for t, c in outside.items())
    return Verdict(False, f"outside the allowed tools: {shown}")


@check("allowed_servers")
def allowed_servers(trace: Trace, *, servers: NonEmpty, local: bool = True, calls: Calls = "all") -> Verdict:
    """Passes when every tool call that went to an MCP server went to a server of the list.

    Args:
        servers: The MCP servers calls may go to: a non-empty list of names. Required.
        local: Whether a call that went to no MCP server (a tool of the agent's own code) is allowed.
            Default `true`.
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    allowed = set(servers)
    outside: dict[str, list[str]] = {}
    for s in _in_scope(trace, calls):
        server = s.__dict__.get("server")
        if server is None and local:
            continue
        if server not in allowed:
            outside.setdefault(server or "no MCP server", []).append(s.name or "(unnamed)")
    if not outside:
        return Verdict(True)
    shown = "; ".join(f"{', '.join(dict.fromkeys(tools))} on {where}" for where, tools in outside.items())
    return Verdict(False, f"calls outside the allowed servers: {shown}")
