"""Checks on tool calls: called, not_called, called_at_most, arg, args, order, trajectory, no_repeat,
no_tool_errors, tool_schemas."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Literal

from kit.canonical import deep_equal, dotted, partial_equal
from kit.checks.params import Pattern, ToolSchemas
from kit.checks.registry import check
from kit.checks.text import short
from kit.result import Verdict
from kit.trace import Span, Trace

Which = Literal["any", "first", "last", "all"]


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


def _calls(trace: Trace, tool: str) -> list[Span]:
    return [s for s in trace.tool_calls if s.name == tool]


def _times(n: int) -> str:
    return "1 time" if n == 1 else f"{n} times"


@check("called", label="called:{tool}")
def called(trace: Trace, *, tool: str, min: int = 1) -> Verdict:
    n = trace.tool_names.count(tool)
    if n >= min:
        return Verdict(True, f"{tool} called {_times(n)}")
    if n == 0:
        return Verdict(False, f"{tool} never called")
    return Verdict(False, f"{tool} called {_times(n)}, at least {min} required")


@check("not_called", label="not_called:{tool}")
def not_called(trace: Trace, *, tool: str | list[str]) -> Verdict:
    tools = [tool] if isinstance(tool, str) else tool
    counts = Counter(n for n in trace.tool_names if n in tools)
    if not counts:
        return Verdict(True)
    shown = "; ".join(f"forbidden {t} was called {_times(c)}" for t, c in counts.items())
    return Verdict(False, shown)


@check("called_at_most", label="called_at_most:{tool}")
def called_at_most(trace: Trace, *, tool: str, n: int = 1) -> Verdict:
    got = trace.tool_names.count(tool)
    if got <= n:
        return Verdict(True, f"{tool} called {_times(got)}")
    return Verdict(False, f"{tool} called {_times(got)}, at most {n} allowed")


def _chosen(calls: list[Span], which: Which) -> list[Span]:
    if which == "first":
        return calls[:1]
    if which == "last":
        return calls[-1:]
    return calls


def _shown(v: Any) -> str:
    return short(json.dumps(v, default=str, sort_keys=True))


def _validate_arg(params: dict[str, Any]) -> None:
    has_expected = params["expected"] is not UNSET
    has_pattern = params["pattern"] is not None
    if has_expected == has_pattern:
        raise ValueError("give exactly one of 'expected' or 'pattern'")
    if params["tol"] is not None and not has_expected:
        raise ValueError("'tol' goes with 'expected'")


@check("arg", label="arg:{tool}.{key}", validate=_validate_arg)
def arg(
    trace: Trace,
    *,
    tool: str,
    key: str,
    expected: Any = UNSET,
    pattern: Pattern | None = None,
    tol: float | None = None,
    which: Which = "any",
) -> Verdict:
    calls = _calls(trace, tool)
    if not calls:
        return Verdict(False, f"{tool} never called")
    got: list[Any] = []
    oks: list[bool] = []
    for call in _chosen(calls, which):
        found, value = dotted(call.input, key)
        if not found:
            got.append(UNSET)
            oks.append(False)
            continue
        got.append(value)
        if pattern is not None:
            text = value if isinstance(value, str) else json.dumps(value, default=str)
            oks.append(pattern.fullmatch(text) is not None)
        else:
            oks.append(deep_equal(value, expected, tol or 0.0))
    ok = all(oks) if which == "all" else any(oks)
    want = f"pattern {pattern.source!r}" if pattern is not None else _shown(expected)
    shown = ", ".join("(missing)" if v is UNSET else _shown(v) for v in got)
    if ok:
        return Verdict(True, f"got {shown}")
    if all(v is UNSET for v in got):
        return Verdict(False, f"{tool} called without {key}")
    if len(got) > 1:
        shown = f"[{shown}] ({which} of {len(got)} calls)"
    return Verdict(False, f"arg {tool}.{key}: got {shown}, want {want}")


@check("args", label="args:{tool}")
def args(
    trace: Trace,
    *,
    tool: str,
    expected: dict[str, Any],
    mode: Literal["exact", "partial"] = "exact",
    which: Which = "any",
) -> Verdict:
    calls = _calls(trace, tool)
    if not calls:
        return Verdict(False, f"{tool} never called")
    chosen = _chosen(calls, which)
    match = partial_equal if mode == "partial" else deep_equal
    oks = [match(expected, c.input) for c in chosen]
    ok = all(oks) if which == "all" else any(oks)
    if ok:
        return Verdict(True)
    bad = next(c for c, good in zip(chosen, oks, strict=True) if not good)
    return Verdict(False, f"{tool} arguments {_shown(bad.input)}, want {mode} match of {_shown(expected)}")


@check("order", label="order:{before}<{after}")
def order(trace: Trace, *, before: str, after: str) -> Verdict:
    names = trace.tool_names
    if after not in names and before not in names:
        return Verdict(False, f"neither {before} nor {after} was called")
    if before not in names:
        return Verdict(False, f"{after} called but {before} never called")
    if after not in names:
        return Verdict(False, f"{before} called but {after} never called")
    i, j = names.index(before), names.index(after)
    if i < j:
        return Verdict(True)
    return Verdict(False, f"{after} (step {j + 1}) came before {before} (step {i + 1})")


@check("guarded", label="guarded:{tool}")
def guarded(trace: Trace, *, tool: str, requires: str | list[str]) -> Verdict:
    """Every call of `tool` comes after a call of each required tool; vacuously true when `tool` is never
    called, so it can stand in an invariant that every case holds (unlike `order`)."""
    needed = [requires] if isinstance(requires, str) else requires
    seen: set[str] = set()
    for step, called_name in enumerate(trace.tool_names, 1):
        if called_name == tool:
            missing = [r for r in needed if r not in seen]
            if missing:
                return Verdict(False, f"{tool} (step {step}) called before any {' or '.join(missing)}")
        seen.add(called_name)
    return Verdict(True)


def _is_subsequence(wanted: list[str], seq: tuple[str, ...]) -> bool:
    it = iter(seq)
    return all(any(x == w for x in it) for w in wanted)


@check("trajectory", label="trajectory:{mode}")
def trajectory(
    trace: Trace,
    *,
    tools: list[str],
    mode: Literal["strict", "in_order", "unordered", "superset", "subset"] = "strict",
) -> Verdict:
    seq = trace.tool_names
    if mode == "strict":
        ok = list(seq) == tools
    elif mode == "in_order":
        ok = _is_subsequence(tools, seq)
    elif mode == "unordered":
        ok = Counter(seq) == Counter(tools)
    elif mode == "superset":
        ok = set(tools) <= set(seq)
    else:
        ok = set(seq) <= set(tools)
    if ok:
        return Verdict(True)
    detail = ""
    if mode == "superset":
        detail = f"; missing {sorted(set(tools) - set(seq))}"
    elif mode == "subset":
        detail = f"; unexpected {sorted(set(seq) - set(tools))}"
    return Verdict(False, f"tool sequence {list(seq)} does not match {mode} {tools}{detail}")


@check("no_repeat")
def no_repeat(trace: Trace) -> Verdict:
    counts = Counter((s.name, s.canonical_input) for s in trace.tool_calls)
    repeats = [(k, c) for k, c in counts.items() if c > 1]
    if not repeats:
        return Verdict(True)
    (tool, canon), c = max(repeats, key=lambda kc: kc[1])
    more = f" (+{len(repeats) - 1} more repeated calls)" if len(repeats) > 1 else ""
    return Verdict(False, f"{tool} called {c} times with the same arguments {short(canon)}{more}")


@check("no_tool_errors", label="no_tool_errors:{tool}")
def no_tool_errors(trace: Trace, *, tool: str | None = None) -> Verdict:
    for i, s in enumerate(trace.tool_calls):
        if s.error is not None and (tool is None or s.name == tool):
            return Verdict(False, f"{s.name} (call {i + 1}) failed: {short(str(s.error))}")
    return Verdict(True)


@check("tool_schemas")
def tool_schemas(trace: Trace, *, schemas: ToolSchemas = "golden/tools.json") -> Verdict:  # type: ignore[assignment]
    import fastjsonschema

    for i, s in enumerate(trace.tool_calls):
        compiled = schemas.schemas.get(s.name or "")
        if compiled is None:
            return Verdict(False, f"tool {s.name!r} (call {i + 1}) is not in {schemas.source}")
        try:
            compiled.validate(s.input)
        except fastjsonschema.JsonSchemaValueException as e:
            return Verdict(False, f"{s.name} (call {i + 1}) arguments: {e.message}")
    return Verdict(True)
