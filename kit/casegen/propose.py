"""The checks a case written from a trace proposes, each with the reason a person reviews it by.

From a trace that passed (it broke no check of the suite), the checks say what happened, as requirements a
person confirms: the writes and sends that happened with their arguments (`args`), `not_called` for the write
and send tools that did not happen, `guarded` for the reads each write or send followed, `no_repeat`, a `budget`
with stated headroom, and `end_state` when the trace holds one. Every one is judged on the trace it came from and
dropped (with a note) if it does not pass there.

From a trace that broke a check, its behaviour is not the requirement: the case's checks are the broken ones
(the broken invariant by name, or its checks), plus checks that freeze nothing the agent did (`no_repeat`, a
`budget` with twice the headroom). No argument, order or count of its calls is proposed as expected.

Never proposed: a check on the answer's text (`contains`, `exact`, `regex` on the output). It would freeze what
this run happened to say, not what the requirement is.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kit.canonical import canonical
from kit.casegen.judged import Verdicts
from kit.checks.limits import NotRecorded, measured
from kit.toolspec import Effect, default_effect
from kit.trace import Trace

# Headroom over the trace's own figures: a passing run's budget is 1.5x what it used, a failing run's twice
# (the fixed agent may need the steps the faulty one skipped). Counts get at least 2 more.
HEADROOM = {False: 0.5, True: 1.0}
MIN_EXTRA_STEPS = 2
MIN_EXTRA_MS = 5000  # a CI run may start cold where production was warm
# An end state larger than this is proposed as its row count, not its rows.
MAX_END_STATE_ROWS = 20


@dataclass(frozen=True)
class Proposal:
    """One check for the case, as its YAML mapping, and why it is there (the comment above it)."""

    check: dict[str, Any]
    why: str
    proposed: bool = True  # False: a check of the suite's that the trace broke, not a proposal


@dataclass(frozen=True)
class Proposals:
    checks: list[Proposal]
    invariants: list[str]  # broken invariants the case lists by name
    notes: list[str]  # what was left out, and why (comments in the case file, lines on stdout)


def propose(
    trace: Trace,
    verdicts: Verdicts,
    effects: dict[str, Effect],
    *,
    by_name: Callable[[str], bool],
) -> Proposals:
    """The checks for a case from `trace`. `effects`: the suite's tools.json effects (a tool it lacks gets
    its default effect); `by_name(invariant)`: the case can list the invariant by name (its file is the one
    the case will load)."""
    failing = verdicts.failing
    checks: list[Proposal] = []
    invariants: list[str] = []
    notes: list[str] = []
    if failing:
        for name in verdicts.broken_invariants:
            judged = verdicts.of_invariant(name)
            broken = ", ".join(f"{j.result.name} ({j.result.reason})" for j in judged if j.result.outcome == "fail")
            unjudged = [j for j in judged if j.result.error]
            if not unjudged and by_name(name):
                invariants.append(name)
                notes.append(f"invariant {name}: broken by this trace: {broken}")
                continue
            for j in judged:
                if j.result.error:
                    notes.append(f"invariant {name}: {j.result.name} left out: this trace cannot judge it")
                    continue
                state = "broken by this trace: " + j.result.reason if j.result.outcome == "fail" else "held"
                checks.append(Proposal(dict(j.spec.raw), f"from invariant {name}, {state}", proposed=False))
        for j in verdicts.broken:
            if j.invariant is None:
                checks.append(
                    Proposal(
                        dict(j.spec.raw), f"from case {trace.case_id}: broken by this trace: {j.result.reason}", False
                    )
                )
        notes.append(
            "no args, not_called, guarded or end_state proposed: this trace broke a check, so what its agent did "
            "is not the requirement (write them from a run that passed)"
        )
    else:
        checks += _acting(trace, effects)
    checks += _no_repeat(trace, failing)
    checks += _budget(trace, failing)
    if not failing:
        state, note = _end_state(trace)
        checks += state
        notes += note
    return Proposals(checks, invariants, notes)


def _effect(effects: dict[str, Effect], tool: str) -> Effect:
    return effects.get(tool) or default_effect(tool)


def _acting(trace: Trace, effects: dict[str, Effect]) -> list[Proposal]:
    """args for each write or send that happened, guarded for the reads before each, not_called for the
    write and send tools of tools.json that did not happen."""
    out: list[Proposal] = []
    seen_args: set[str] = set()
    guarded: dict[str, list[str]] = {}
    reads: list[str] = []
    for span in trace.tool_calls:
        name = span.name or ""
        effect = _effect(effects, name)
        if effect == "read":
            if name not in reads:
                reads.append(name)
            continue
        key = name + " " + canonical(span.input)
        if key not in seen_args:
            seen_args.add(key)
            out.append(
                Proposal(
                    {"type": "args", "tool": name, "expected": dict(span.input)},
                    f"{name} ({effect}) was called with these arguments (a value that may differ run to run: "
                    "drop it, or use mode: partial)",
                )
            )
        guarded.setdefault(name, list(reads))
    for name, before in guarded.items():
        if before:
            requires: Any = before[0] if len(before) == 1 else before
            out.append(
                Proposal(
                    {"type": "guarded", "tool": name, "requires": requires},
                    f"{name} came after {', '.join(before)}: every call of it must",
                )
            )
    called = set(trace.tool_names)
    unused = sorted(n for n, e in effects.items() if e != "read" and n not in called)
    if unused:
        tool: Any = unused[0] if len(unused) == 1 else unused
        out.append(
            Proposal(
                {"type": "not_called", "tool": tool},
                "the write and send tools of tools.json this conversation did not need",
            )
        )
    return out


def _no_repeat(trace: Trace, failing: bool) -> list[Proposal]:
    keys = [(s.name, canonical(s.input)) for s in trace.tool_calls]
    if len(set(keys)) == len(keys):
        return [Proposal({"type": "no_repeat"}, "no tool was called twice with the same arguments")]
    if failing:
        return [Proposal({"type": "no_repeat"}, "this trace calls a tool twice with the same arguments: it fails here")]
    return []


def _limit(value: float, headroom: float, key: str) -> float | int:
    grown = math.ceil(value * (1 + headroom))
    if key in ("steps", "tool_calls"):
        return max(grown, int(value) + MIN_EXTRA_STEPS)
    if key == "latency_ms":
        return max(grown, math.ceil(value) + MIN_EXTRA_MS)
    return grown


def _budget(trace: Trace, failing: bool) -> list[Proposal]:
    """Budgets on what the trace measured, each its own check: steps and tool calls (counted in every run),
    tokens (an agent whose runs record none makes that check an error, never a pass) and latency (wall time
    varies with the machine, a cold start, a replay: it gets at least `MIN_EXTRA_MS` more)."""
    headroom = HEADROOM[failing]
    whose = "this failing trace's figures" if failing else "this trace's figures"
    out: list[Proposal] = []
    for name, keys in (
        ("budget", ("steps", "tool_calls")),
        ("budget:tokens", ("tokens",)),
        ("budget:latency", ("latency_ms",)),
    ):
        check: dict[str, Any] = {"name": name, "type": "budget"} if name != "budget" else {"type": "budget"}
        said: list[str] = []
        for key in keys:
            try:
                got = measured(trace, key)
            except NotRecorded:
                continue
            if key in ("tokens", "latency_ms") and got <= 0:
                continue
            limit = _limit(got, headroom, key)
            check[key] = limit
            unit = " ms" if key == "latency_ms" else ""
            said.append(f"{key} {got:g}{unit} -> {limit:g}{unit}")
        if not said:
            continue
        floor = {"budget": f", at least +{MIN_EXTRA_STEPS}", "budget:latency": f", at least +{MIN_EXTRA_MS} ms"}
        why = f"{whose} plus {headroom:.0%} headroom{floor.get(name, '')}: {'; '.join(said)}"
        if name == "budget:tokens":
            why += " (an agent whose runs record no tokens makes this check an error: drop it then)"
        out.append(Proposal(check, why))
    return out


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _end_state(trace: Trace) -> tuple[list[Proposal], list[str]]:
    """One end_state check per table the trace's end state holds: its rows, or its row count when large."""
    out: list[Proposal] = []
    notes: list[str] = []
    for table, rows in sorted(trace.end_state.items()):
        columns: list[str] = []
        for r in rows:
            columns += [c for c in r if c not in columns]
        if not rows:
            check = {"type": "end_state", "query": f"SELECT * FROM {_quoted(table)}", "empty": True}
            out.append(Proposal(check, f"table {table} was empty at the end"))
        elif len(rows) > MAX_END_STATE_ROWS or not columns:
            check = {"type": "end_state", "query": f"SELECT count(*) FROM {_quoted(table)}", "expected": [[len(rows)]]}
            out.append(Proposal(check, f"table {table} held {len(rows)} rows at the end"))
        else:
            cols = ", ".join(_quoted(c) for c in columns)
            expected = [[r.get(c) for c in columns] for r in rows]
            check = {"type": "end_state", "query": f"SELECT {cols} FROM {_quoted(table)}", "expected": expected}
            out.append(Proposal(check, f"table {table} at the end, as this run left it"))
    return out, notes
