"""Checks on the final output: exact, number, contains, regex, no_pii, json, schema."""

from __future__ import annotations

import functools
import json
import math
from typing import TYPE_CHECKING, Any, Literal

from kit.checks.registry import check
from kit.checks.text import find_pii, normalise_text, numbers_in, short
from kit.result import Verdict

if TYPE_CHECKING:  # hints resolved by the registry when parameters are first parsed
    from typing import Annotated

    from pydantic import Field

    from kit.checks.params import Finite, NonNegative, Pattern, Schema
    from kit.trace import Trace


@check("exact")
def exact(trace: Trace, *, expected: str | int | float, normalise: bool = True) -> Verdict:
    """Passes when the output equals `expected` (after normalising both, when `normalise` is on).

    Args:
        expected: The text the output must equal; a number is compared as its string form (`42.5` as
            "42.5"). Required.
        normalise: `true`: trim, casefold and collapse runs of white space to one space on both sides
            before comparing; `false`: compare character for character. Default `true`.
    """
    want = str(expected)
    got = trace.output
    ok = normalise_text(got) == normalise_text(want) if normalise else got == want
    return Verdict(ok, "" if ok else f"output {short(got)!r}, want {short(want)!r}")


@check("number")
def number(trace: Trace, *, expected: Finite, tol: NonNegative = 1e-9, rel: NonNegative | None = None) -> Verdict:
    """Passes when the output holds exactly one number and it is within tolerance of `expected`.

    Numbers are read as people write them: `$1,234.50` reads as 1234.5, and digits inside identifiers
    (`ORD-123456`) are not numbers. The number is within tolerance when it is within `tol` of `expected`
    or within `rel` times the larger of the two magnitudes (either suffices, as in `math.isclose`).

    Args:
        expected: The number wanted: finite (NaN and infinities are refused at load). Required.
        tol: Absolute tolerance: a finite number >= 0. Default `1e-9`.
        rel: Relative tolerance: a finite number >= 0. Optional: unset by default (no relative tolerance).
    """
    found = numbers_in(trace.output)
    if len(found) != 1:
        shown = ", ".join(f"{n:g}" for n in found[:5])
        return Verdict(False, f"output holds {len(found)} numbers ({shown}), want exactly one")
    got = found[0]
    ok = math.isclose(got, expected, rel_tol=rel or 0.0, abs_tol=tol)
    return Verdict(ok, f"got {got:g}, want {expected:g}" + ("" if ok else f" (tol {tol:g})"))


def _validate_contains(params: dict[str, Any]) -> None:
    texts = [params["text"]] if isinstance(params["text"], str) else params["text"]
    if not texts:
        raise ValueError("parameter 'text': give at least one text (an empty list always passes)")
    if any(not normalise_text(t) for t in texts):
        raise ValueError("parameter 'text': an empty or blank text is in every output (it always passes)")


@functools.lru_cache(maxsize=4096)
def _needle(text: str) -> str:
    """A text a case looks for, normalised once rather than on every trace it judges."""
    return normalise_text(text)


@check("contains", validate=_validate_contains)
def contains(trace: Trace, *, text: str | list[str], all: bool = True) -> Verdict:
    """Passes when the normalised output contains every text of `text` (or, with `all: false`, any of them).

    Args:
        text: One text or a list of texts, each looked for in the output after normalising both (trim,
            casefold, collapse runs of white space). Required; an empty list or a blank text is refused at
            load (it would always pass).
        all: `true`: every text must be present; `false`: at least one. Default `true`.
    """
    texts = [text] if isinstance(text, str) else text
    out = normalise_text(trace.output)
    missing = [t for t in texts if _needle(t) not in out]
    ok = not missing if all else len(missing) < len(texts)
    if ok:
        return Verdict(True)
    if all:
        return Verdict(False, f"output lacks {', '.join(repr(t) for t in missing)}")
    return Verdict(False, f"output holds none of {', '.join(repr(t) for t in texts)}")


def _validate_regex(params: dict[str, Any]) -> None:
    if not params["pattern"].source:
        raise ValueError("parameter 'pattern': an empty pattern matches every text")


@check("regex", label="regex:{pattern}", validate=_validate_regex)
def regex_check(
    trace: Trace,
    *,
    pattern: Pattern,
    present: bool = True,
    target: Literal["output", "tools"] = "output",
) -> Verdict:
    """Passes when `pattern` is found in the target (or, with `present: false`, is not found).

    Args:
        pattern: A regular expression (the `regex` module's syntax), searched for anywhere in the target and
            stopped after `KIT_REGEX_TIMEOUT` seconds (an `error`). Required; an empty pattern, an invalid
            one or one too big to compile is refused at load.
        present: `true`: the pattern must be found; `false`: it must not be. Default `true`.
        target: What is searched: `output` (the final output) or `tools` (every tool call that ran: its
            name, arguments and result, as JSON lines). Default `output`.
    """
    text = trace.output if target == "output" else trace.tools_text
    m = pattern.search(text)
    where = "output" if target == "output" else "tool calls"
    if present:
        return Verdict(m is not None, "" if m else f"{pattern.source!r} not found in {where}")
    return Verdict(m is None, "" if m is None else f"{pattern.source!r} found in {where}: {m.group(0)!r}")


PII_KINDS = ("email", "card", "phone", "ssn")


@check("no_pii")
def no_pii(
    trace: Trace,
    *,
    kinds: Annotated[list[Literal["email", "card", "phone", "ssn"]], Field(min_length=1)] = list(PII_KINDS),  # noqa: B006
    allow: list[str] = [],  # noqa: B006
) -> Verdict:
    """Passes when the output holds no personal data of the given kinds (bar the allowed values).

    Args:
        kinds: The kinds looked for, a non-empty list of `email`, `card` (13 to 19 digits that pass the Luhn
            check), `phone` and `ssn` (`123-45-6789`). Default `[email, card, phone, ssn]`.
        allow: Literal values that may appear (compared case-insensitively with the whole value found),
            e.g. the support desk's own email address. Default `[]`.
    """
    found = find_pii(trace.output, kinds, allow)
    if not found:
        return Verdict(True)
    shown = ", ".join(f"{kind} {value!r}" for kind, value in found[:3])
    more = f" (+{len(found) - 3} more)" if len(found) > 3 else ""
    return Verdict(False, f"output leaks {shown}{more}")


def _parse_json_output(trace: Trace) -> tuple[Any, str]:
    text = trace.output.strip()
    try:
        return json.loads(text), ""
    except json.JSONDecodeError as e:
        # A fenced block is not JSON to the program that reads it; say so rather than accept it.
        # (What fullmatch(r"```(?:json)?\s*.*?\s*```", re.S) says, without its cubic backtracking.)
        fenced = len(text) >= 6 and text.startswith("```") and text.endswith("```")
        hint = " (it is wrapped in a ``` fence)" if fenced else ""
        return None, f"output is not JSON{hint} ({e.msg} at line {e.lineno}, column {e.colno})"


@check("json")
def json_check(trace: Trace, *, keys: list[str] = []) -> Verdict:  # noqa: B006
    """Passes when the output parses as a JSON object holding every key of `keys`.

    The whole output (trimmed) must be JSON: one wrapped in a ``` fence fails, and the reason says so.

    Args:
        keys: Top-level keys the object must hold. Default `[]` (any JSON object passes).
    """
    data, err = _parse_json_output(trace)
    if err:
        return Verdict(False, err)
    if not isinstance(data, dict):
        return Verdict(False, f"output is JSON {type(data).__name__}, want an object")
    missing = [k for k in keys if k not in data]
    if missing:
        return Verdict(False, f"output JSON lacks keys {missing}")
    return Verdict(True)


def _target(v: Any) -> str:
    if v == "output" or (isinstance(v, str) and v.startswith("tool:") and len(v) > 5):
        return v
    raise ValueError(f"target must be 'output' or 'tool:NAME', got {v!r}")


def _validate_schema_params(params: dict[str, Any]) -> None:
    _target(params["target"])


@check("schema", label="schema:{target}", validate=_validate_schema_params)
def schema(trace: Trace, *, schema: Schema, target: str = "output") -> Verdict:
    """Passes when the output (parsed as JSON), or the arguments of every call of a tool, validate.

    Args:
        schema: A JSON Schema, inline or as the path of a JSON file (relative to the case file's folder or
            one of its ancestors); compiled at load. A `$ref` may point inside the schema or to a JSON file
            inside the case's folder; `http:`, `https:`, `file:` and paths that leave the folder are refused
            at load. Required.
        target: What is validated: `output` (the final output, which must parse as JSON) or `tool:NAME`
            (the arguments of every call of NAME that ran; with no call there is nothing to validate and it
            passes: whether NAME must be called is a `called` check of its own). Default `output`.
    """
    import fastjsonschema

    if target == "output":
        data, err = _parse_json_output(trace)
        if err:
            return Verdict(False, err)
        try:
            schema.validate(data)
        except fastjsonschema.JsonSchemaValueException as e:
            return Verdict(False, f"output: {e.message}")
        return Verdict(True)
    tool = target[5:]
    calls = [s for s in trace.tool_calls if s.name == tool]
    if not calls:
        return Verdict(True, f"{tool} never called: no arguments to validate")
    for i, call in enumerate(calls):
        try:
            schema.validate(call.input)
        except fastjsonschema.JsonSchemaValueException as e:
            return Verdict(False, f"{tool} call {i + 1} arguments: {e.message}")
    return Verdict(True)
