"""Judging a trace imports neither pydantic nor YAML: `import kit.evaluate` stays well under 100 ms. The
check parameters' hints, imported by the check modules for type checkers only, are resolved when a case's
parameters are first parsed, and a case and a trace loaded the normal way are judged as before."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from _oracle import make_case, make_trace, run1, tool

from kit.checks import REGISTRY
from kit.checks.registry import check
from kit.errors import KitInputError
from kit.result import Verdict

if TYPE_CHECKING:  # resolved by the registry, as in the catalogue's own modules
    from kit.checks.params import Count, Pattern
    from kit.trace import Trace


def fresh(code: str, cwd: Path | None = None) -> str:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, cwd=cwd
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


@pytest.mark.parametrize("statement", ["import kit.evaluate", "from kit.evaluate import evaluate"])
def test_importing_the_evaluator_imports_neither_pydantic_nor_yaml(statement):
    out = fresh(
        f"""
        import sys
        {statement}
        heavy = ("pydantic", "pydantic_core", "yaml", "kit.case", "kit.trace", "kit.checks.params")
        print(sorted(m for m in heavy if m in sys.modules), "kit.checks" in sys.modules)
        """
    )
    assert out.split("\n")[0] == "[] True"


def test_an_evaluator_imported_first_judges_a_case_and_a_trace_loaded_the_normal_way(tmp_path):
    checks = (
        "  - {type: called, tool: lookup_order, min: 2}\n"
        "  - {type: regex, pattern: 'ORD-\\d+'}\n"
        "  - {type: budget, steps: 0}\n"
        "  - {type: no_pii, kinds: KINDS}\n"
    )
    (tmp_path / "bad.yaml").write_text("id: a\ninput: hi\nchecks:\n" + checks.replace("KINDS", "[]"))
    (tmp_path / "good.yaml").write_text("id: a\ninput: hi\nchecks:\n" + checks.replace("KINDS", "[email]"))
    trace = {"case_id": "a", "final_output": "ORD-7", "spans": [{"kind": "tool", "name": "lookup_order"}]}
    (tmp_path / "t.json").write_text(json.dumps(trace))
    out = fresh(
        """
        import json
        from kit.evaluate import evaluate
        from kit.case import load_suite
        from kit.trace import load_trace

        print(json.dumps([str(e) for e in load_suite("bad.yaml").errors]))
        print(json.dumps(evaluate(load_trace("t.json"), load_suite("good.yaml").cases[0]).to_dict()))
        """,
        cwd=tmp_path,
    )
    errors, run = (json.loads(line) for line in out.splitlines())
    # A bad parameter is refused at load, worded as ever: no_pii's hint `Annotated[..., Field(min_length=1)]`
    # is resolved although its module imports neither Annotated nor Field at run time.
    assert errors == [
        "bad.yaml: case 'a': check #4 (no_pii): parameter 'kinds': List should have at least 1 item after "
        "validation, not 0"
    ]
    assert run["passed"] is False
    assert run["checks"] == [
        {
            "check": "called:lookup_order",
            "outcome": "fail",
            "reason": "lookup_order called 1 time, at least 2 required",
        },
        {"check": "regex:ORD-\\d+", "outcome": "pass", "reason": ""},
        {"check": "budget", "outcome": "pass", "reason": "steps 0 <= 0"},
        {"check": "no_pii", "outcome": "pass", "reason": ""},
    ]


# A check as a user writes it: its hints name types this module imports for type checkers only.
def _logged(fn):
    @functools.wraps(fn)
    def wrapper(trace, **params):
        return fn(trace, **params)

    return wrapper


@_logged
def _at_most_pattern(trace: Trace, *, pattern: Pattern, n: Count = 1) -> Verdict:
    got = len([s for s in trace.tool_calls if pattern.fullmatch(s.name or "")])
    return Verdict(got <= n, f"{got} calls match {pattern.source!r}")


@pytest.fixture
def at_most_pattern():
    """The check above, registered for one test (the golden set must cover every registered type)."""
    check("test_hints_at_most_pattern")(_at_most_pattern)
    yield
    del REGISTRY["test_hints_at_most_pattern"]


def test_a_check_s_hints_resolve_from_the_parameter_types_and_through_a_wrapper(at_most_pattern):
    fields = REGISTRY["test_hints_at_most_pattern"].params.model_fields
    assert list(fields) == ["pattern", "n"]
    trace = make_trace(tool("lookup_order"), tool("lookup_user"), tool("send_email"))
    r = run1(trace, {"type": "test_hints_at_most_pattern", "pattern": "lookup_.*"})
    assert (r.outcome, r.reason) == ("fail", "2 calls match 'lookup_.*'")
    with pytest.raises(KitInputError) as e:
        make_case({"type": "test_hints_at_most_pattern", "pattern": "x", "n": -1})
    assert e.value.message == "parameter 'n': Input should be greater than or equal to 0"
    with pytest.raises(KitInputError) as e:
        make_case({"type": "test_hints_at_most_pattern", "pattern": "("})
    assert e.value.message == "parameter 'pattern': invalid regex '(': missing ) at position 1"
