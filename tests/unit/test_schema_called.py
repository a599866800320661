"""`schema` on a tool checks the calls that happened (no call: nothing to validate, a pass); whether the tool
must be called is a `called` check of its own, and `kit lint` warns where a case has the one without the other."""

from __future__ import annotations

from pathlib import Path

from _oracle import make_trace, run1

from kit.commands import lint as kit_lint
from kit.settings import load_settings

ARGS = {"type": "object", "required": ["rental_id"]}


def lint(root, **options):
    """`kit lint` on `root` with the settings of the working directory, as its command line reads them."""
    return kit_lint.lint(root, settings=load_settings(), **options)


def test_schema_on_a_tool_checks_only_the_calls_that_happened() -> None:
    check = {"type": "schema", "schema": ARGS, "target": "tool:extend_rental"}
    none = run1(make_trace(), check)
    assert none.passed and not none.error and none.reason == "extend_rental never called: no arguments to validate"
    bad = make_trace({"kind": "tool", "name": "extend_rental", "input": {"days": 2}})
    r = run1(bad, check)
    assert not r.passed and "extend_rental call 1 arguments" in r.reason
    # Whether it must be called is its own check.
    assert not run1(make_trace(), {"type": "called", "tool": "extend_rental"}).passed


def _lint(tmp_path: Path, checks: str) -> list[str]:
    (tmp_path / "cases.yaml").write_text(f"id: extend\ninput: extend my rental\nchecks:\n{checks}")
    report = lint(tmp_path / "cases.yaml")
    assert not report.problems, report.problems
    return [w for w in report.warnings if "schema" in w]


def test_lint_warns_where_a_case_relies_on_schema_to_require_the_call(tmp_path: Path) -> None:
    schema = '  - {type: schema, target: "tool:extend_rental", schema: {type: object}}\n'
    [warning] = _lint(tmp_path, schema)
    assert "case 'extend'" in warning and "cases.yaml" in warning
    assert "schema:tool:extend_rental: passes when extend_rental is never called" in warning
    assert "{type: called, tool: extend_rental}" in warning
    assert _lint(tmp_path, schema + "  - {type: called, tool: extend_rental}\n") == []
