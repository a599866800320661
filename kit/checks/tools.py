"""Checks on tool calls: called, not_called, called_at_most, arg, args, order, trajectory, no_repeat,
no_tool_errors, tool_schemas.

Every check over calls counts the calls that ran (`Trace.tool_calls`: a call the model asked for that never
ran, e.g. held back by a confirmation guard, is `"executed": false` and not counted). `calls`: `all`
(default), `ok` (the calls that ran and whose `error` is null: real agents retry failed writes, and a failed
call changed nothing) or `requested` (every call the model asked for, run or not). With `ok` a reason says
"successfully", with `requested` "called or requested", wherever it counts calls, so it stays exact; a step
number is the call's place among all calls that ran (among all requested calls with `requested`).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import TYPE_CHECKING, Any, Literal

from kit.canonical import canonical, canonical_key, deep_equal, dotted, partial_equal
from kit.checks.registry import check
from kit.checks.text import short
from kit.result import Verdict

if TYPE_CHECKING:  # hints resolved by the registry when parameters are first parsed
    from typing import Annotated

    from pydantic import Field

    from kit.checks.params import NonEmpty, Pattern, ToolSchemas
    from kit.trace import Span, Trace

Which = Literal["any", "first", "last", "all"]
Calls = Literal["all", "ok", "requested"]


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


def _steps(trace: Trace, calls: Calls) -> tuple[tuple[int, Span], ...]:
    """(step, call) for the calls in scope, step = 1-based place among all tool calls; cached per trace."""
    key = "steps:" + calls
    got = trace.derived.get(key)
    if got is None:
        if calls == "requested":
            got = tuple(enumerate(trace.requested_calls, 1))
        else:
            got = tuple((i, s) for i, s in enumerate(trace.tool_calls, 1) if calls == "all" or s.error is None)
        trace.derived[key] = got
    return got


def _in_scope(trace: Trace, calls: Calls) -> tuple[Span, ...]:
    if calls == "all":
        return trace.tool_calls
    if calls == "requested":
        return trace.requested_calls
    return tuple(s for _, s in _steps(trace, calls))


def _names(trace: Trace, calls: Calls) -> tuple[str, ...]:
    if calls == "all":
        return trace.tool_names
    key = "names:" + calls
    got = trace.derived.get(key)
    if got is None:
        got = trace.derived[key] = tuple(s.name or "" for s in _in_scope(trace, calls))
    return got


def _calls(trace: Trace, tool: str, calls: Calls) -> list[Span]:
    return [s for s in _in_scope(trace, calls) if s.name == tool]


_QUALIFIERS = {"ok": " successfully", "requested": " or requested"}


def _ok(calls: Calls) -> str:
    """The qualifier a reason carries when it counts other calls than those that ran."""
    return _QUALIFIERS.get(calls, "")


def _times(n: int) -> str:
    return "1 time" if n == 1 else f"{n} times"


@check("called", label="called:{tool}")
def called(trace: Trace, *, tool: str, min: Annotated[int, Field(ge=1)] = 1, calls: Calls = "all") -> Verdict:
    """Passes when `tool` was called at least `min` times.

    Args:
        tool: The tool's name. Required.
        min: The fewest calls that pass: an integer >= 1. Default `1`.
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    n = _names(trace, calls).count(tool)
    ok = _ok(calls)
    if n >= min:
        return Verdict(True, f"{tool} called{ok} {_times(n)}")
    if n == 0:
        return Verdict(False, f"{tool} never called{ok}")
    return Verdict(False, f"{tool} called{ok} {_times(n)}, at least {min} required")


@check("not_called", label="not_called:{tool}")
def not_called(trace: Trace, *, tool: str | NonEmpty, calls: Calls = "all") -> Verdict:
    """Passes when none of the named tools was called.

    Args:
        tool: A tool's name, or a non-empty list of names. Required.
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    tools = [tool] if isinstance(tool, str) else tool
    names = _names(trace, calls)
    if set(tools).isdisjoint(names):
        return Verdict(True)
    counts = Counter(n for n in names if n in tools)
    ok = _ok(calls)
    shown = "; ".join(f"forbidden {t} was called{ok} {_times(c)}" for t, c in counts.items())
    return Verdict(False, shown)


@check("called_at_most", label="called_at_most:{tool}")
def called_at_most(trace: Trace, *, tool: str, n: Annotated[int, Field(ge=0)] = 1, calls: Calls = "all") -> Verdict:
    """Passes when `tool` was called no more than `n` times (never called passes).

    Args:
        tool: The tool's name. Required.
        n: The most calls that pass: an integer >= 0. Default `1`.
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    got = _names(trace, calls).count(tool)
    ok = _ok(calls)
    if got <= n:
        return Verdict(True, f"{tool} called{ok} {_times(got)}")
    return Verdict(False, f"{tool} called{ok} {_times(got)}, at most {n} allowed")


def _chosen(calls: list[Span], which: Which) -> list[Span]:
    if which == "first":
        return calls[:1]
    if which == "last":
        return calls[-1:]
    return calls


def _shown(v: Any) -> str:
    if type(v) is str:  # what json.dumps writes for a string, without building an encoder per call
        return short(encode_basestring_ascii(v))
    return short(json.dumps(v, default=str, sort_keys=True))


def _validate_arg(params: dict[str, Any]) -> None:
    has_expected = params["expected"] is not UNSET
    has_pattern = params["pattern"] is not None
    if has_expected == has_pattern:
        raise ValueError("give exactly one of 'expected' or 'pattern'")
    if params["tol"] is not None and not has_expected:
        raise ValueError("'tol' goes with 'expected'")
    _no_nan(params["expected"])


def _no_nan(value: Any) -> None:
    """NaN equals nothing, so an expected value holding one can never pass."""
    if isinstance(value, float) and math.isnan(value):
        raise ValueError("parameter 'expected': NaN equals nothing, so the check could never pass")
    if isinstance(value, dict):
        for v in value.values():
            _no_nan(v)
    elif isinstance(value, list | tuple):
        for v in value:
            _no_nan(v)


@check("arg", label="arg:{tool}.{key}", validate=_validate_arg)
def arg(
    trace: Trace,
    *,
    tool: str,
    key: str,
    expected: Any = UNSET,
    pattern: Pattern | None = None,
    tol: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None,
    which: Which = "any",
    calls: Calls = "all",
) -> Verdict:
    """Passes when the argument at `key` of the chosen call(s) of `tool` matches.

    Give exactly one of `expected` and `pattern`. The check fails when `tool` was never called.

    Args:
        tool: The tool's name. Required.
        key: A dotted path into the call's arguments (`address.zip`, `items.0.sku`); a chosen call without
            it does not match. Required.
        expected: The value wanted, compared deeply (numbers by value, `1 == 1.0`; a bool never equals a
            number); NaN anywhere in it is refused at load. Optional: unset by default.
        pattern: A regular expression that must match the whole of the value's text (a string as it is, any
            other value as JSON), under the `KIT_REGEX_TIMEOUT` limit. Optional: unset by default.
        tol: Absolute tolerance for the numbers in `expected`: a finite number >= 0, only with `expected`.
            Optional: unset by default (numbers must be equal).
        which: The calls of `tool` judged: `any` (at least one matches), `first`, `last` or `all` (every
            one matches). Default `any`.
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    found_calls = _calls(trace, tool, calls)
    if not found_calls:
        return Verdict(False, f"{tool} never called{_ok(calls)}")
    got: list[Any] = []
    oks: list[bool] = []
    for call in _chosen(found_calls, which):
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
    shown = ", ".join(["(missing)" if v is UNSET else _shown(v) for v in got])
    if ok:
        return Verdict(True, f"got {shown}")
    want = f"pattern {pattern.source!r}" if pattern is not None else _shown(expected)
    if all(v is UNSET for v in got):
        return Verdict(False, f"{tool} called{_ok(calls)} without {key}")
    if len(got) > 1:
        kind = {"ok": "successful calls", "requested": "requested calls"}.get(calls, "calls")
        shown = f"[{shown}] ({which} of {len(got)} {kind})"
    return Verdict(False, f"arg {tool}.{key}: got {shown}, want {want}")


def _validate_args(params: dict[str, Any]) -> None:
    _no_nan(params["expected"])


@check("args", label="args:{tool}", validate=_validate_args)
def args(
    trace: Trace,
    *,
    tool: str,
    expected: dict[str, Any],
    mode: Literal["exact", "partial"] = "exact",
    which: Which = "any",
    calls: Calls = "all",
) -> Verdict:
    """Passes when the arguments of the chosen call(s) of `tool` match `expected`.

    Key order never matters, nested values compare deeply and numbers by value (`1 == 1.0`). The check
    fails when `tool` was never called.

    Args:
        tool: The tool's name. Required.
        expected: The arguments wanted, an object; NaN anywhere in it is refused at load. Required.
        mode: `exact`: equal as a whole; `partial`: every key `expected` names is present and equal, keys
            it does not name are ignored at every depth, and lists still compare element by element and by
            length. Default `exact`.
        which: The calls of `tool` judged: `any` (at least one matches), `first`, `last` or `all` (every
            one matches). Default `any`.
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    found_calls = _calls(trace, tool, calls)
    if not found_calls:
        return Verdict(False, f"{tool} never called{_ok(calls)}")
    chosen = _chosen(found_calls, which)
    match = partial_equal if mode == "partial" else deep_equal
    oks = [match(expected, c.input) for c in chosen]
    ok = all(oks) if which == "all" else any(oks)
    if ok:
        return Verdict(True)
    bad = next(c for c, good in zip(chosen, oks, strict=True) if not good)
    return Verdict(False, f"{tool} arguments {_shown(bad.input)}, want {mode} match of {_shown(expected)}")


def _first_step(trace: Trace, calls: Calls, tool: str) -> int | None:
    if calls == "all" and tool:  # the step of the first call named `tool`, found in C (names hold `name or ""`)
        names = trace.tool_names
        return names.index(tool) + 1 if tool in names else None
    return next((i for i, s in _steps(trace, calls) if s.name == tool), None)


def _validate_order(params: dict[str, Any]) -> None:
    if params["before"] == params["after"]:
        raise ValueError("'before' and 'after' name the same tool: a call cannot come before itself")


@check("order", label="order:{before}<{after}", validate=_validate_order)
def order(trace: Trace, *, before: str, after: str, calls: Calls = "all") -> Verdict:
    """Passes when both tools were called and the first `before` call precedes the first `after` call.

    Args:
        before: The tool that must come first. Required.
        after: The tool that must come later; not the same as `before` (refused at load). Required.
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    i, j = _first_step(trace, calls, before), _first_step(trace, calls, after)
    ok = _ok(calls)
    if i is None and j is None:
        return Verdict(False, f"neither {before} nor {after} was called{ok}")
    if i is None:
        return Verdict(False, f"{after} called{ok} but {before} never called{ok}")
    if j is None:
        return Verdict(False, f"{before} called{ok} but {after} never called{ok}")
    if i < j:
        return Verdict(True)
    return Verdict(False, f"{after} (step {j}) came before {before} (step {i})")


@check("guarded", label="guarded:{tool}")
def guarded(trace: Trace, *, tool: str, requires: str | NonEmpty, calls: Calls = "all") -> Verdict:
    """Passes when every call of `tool` comes after a call of each required tool (or `tool` is never called).

    Vacuously true when `tool` is never called, so it can stand in an invariant that every case holds
    (unlike `order`).

    Args:
        tool: The guarded tool's name. Required.
        requires: A tool's name, or a non-empty list of names, each called before every call of `tool`.
            Required.
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    needed = [requires] if isinstance(requires, str) else requires
    seen: set[str] = set()
    for step, span in _steps(trace, calls):
        called_name = span.name or ""
        if called_name == tool:
            missing = [r for r in needed if r not in seen]
            if missing:
                what = " or ".join(("successful " if calls == "ok" else "") + m for m in missing)
                return Verdict(False, f"{tool} (step {step}) called before any {what}")
        seen.add(called_name)
    return Verdict(True)


def _is_subsequence(wanted: list[str], seq: tuple[str, ...]) -> bool:
    it = iter(seq)
    return all(any(x == w for x in it) for w in wanted)


def _validate_trajectory(params: dict[str, Any]) -> None:
    if not params["tools"] and params["mode"] in ("in_order", "superset"):
        raise ValueError(f"parameter 'tools': an empty list in mode {params['mode']} always passes")


@check("trajectory", label="trajectory:{mode}", validate=_validate_trajectory)
def trajectory(
    trace: Trace,
    *,
    tools: list[str],
    mode: Literal["strict", "in_order", "unordered", "superset", "subset"] = "strict",
    calls: Calls = "all",
) -> Verdict:
    """Passes when the sequence of tool-call names matches `tools` in the way `mode` says.

    Args:
        tools: The tool names wanted, a list (an empty list is refused at load in modes `in_order` and
            `superset`, where it always passes). Required.
        mode: `strict`: the same sequence; `in_order`: the listed tools occur in that order, others may
            come between; `unordered`: the same multiset; `superset`: every listed tool was called, extras
            allowed; `subset`: every call was to a listed tool. Default `strict`.
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    seq = _names(trace, calls)
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
    which = {"ok": "successful tool sequence", "requested": "requested tool sequence"}.get(calls, "tool sequence")
    return Verdict(False, f"{which} {list(seq)} does not match {mode} {tools}{detail}")


@check("no_repeat")
def no_repeat(trace: Trace, *, calls: Calls = "all") -> Verdict:
    """Passes when no two tool calls share name and canonical arguments (the loop signature).

    Args:
        calls: Which calls count: `all` (every call that ran), `ok` (the calls that ran and whose `error`
            is null) or `requested` (every call the model asked for, run or not). Default `all`.
    """
    spans = _in_scope(trace, calls)
    keys = [(s.name, canonical_key(s.input)) for s in spans]
    if len(set(keys)) == len(keys):
        return Verdict(True)
    counts = Counter(keys)
    repeats = [(k, c) for k, c in counts.items() if c > 1]
    (tool, key), c = max(repeats, key=lambda kc: kc[1])
    canon = canonical(spans[keys.index((tool, key))].input)
    more = f" (+{len(repeats) - 1} more repeated calls)" if len(repeats) > 1 else ""
    return Verdict(False, f"{tool} called{_ok(calls)} {c} times with the same arguments {short(canon)}{more}")


@check("no_tool_errors", label="no_tool_errors:{tool}")
def no_tool_errors(trace: Trace, *, tool: str | None = None) -> Verdict:
    """Passes when no tool call that ran (of `tool`, when given) has a non-null `error`.

    Args:
        tool: The one tool whose calls are looked at. Optional: unset by default (every tool's calls).
    """
    for i, s in enumerate(trace.tool_calls):
        if s.error is not None and (tool is None or s.name == tool):
            return Verdict(False, f"{s.name} (call {i + 1}) failed: {short(str(s.error))}")
    return Verdict(True)


@check("tool_schemas")
def tool_schemas(trace: Trace, *, schemas: ToolSchemas = "golden/tools.json") -> Verdict:  # type: ignore[assignment]
    """Passes when every tool call's arguments validate against its tool's schema and no other tool was called.

    Args:
        schemas: The tools' JSON Schemas: a map of tool name to the schema of its arguments, or an OpenAI
            or Anthropic tool list, inline or as the path of a JSON file (relative to the case file's folder
            or one of its ancestors); compiled at load. Default `golden/tools.json`.
    """
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


# Checks that fail when their tool was never called: with one of them, a case says the tool must be called.
_REQUIRES_A_CALL = frozenset({"called", "arg", "args"})


def schema_without_called(cases: Iterable[Any]) -> list[tuple[Any, str, str]]:
    """(case, check label, tool) for every `schema` check on `tool:NAME` in a case that has no check requiring
    a call of NAME (`called`, `arg`, `args`): `schema` validates the calls that happened and passes when there
    are none, so such a case, written when it failed on a missing call, no longer says NAME must be called."""
    out = []
    for case in cases:
        required = {
            str(spec.params.get("tool"))
            for spec in case.checks
            if spec.type in _REQUIRES_A_CALL and isinstance(spec.params.get("tool"), str)
        }
        for spec in case.checks:
            target = spec.params.get("target") if spec.type == "schema" else None
            if isinstance(target, str) and target.startswith("tool:") and target[5:] not in required:
                out.append((case, spec.label, target[5:]))
    return out
