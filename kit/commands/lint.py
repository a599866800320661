"""`kit lint PATH`: validate golden case files without running anything."""

from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from kit.case import MAX_RUNS, Case, CheckSpec, find_upwards, invariants_of, load_invariants, load_suite
from kit.checks.params import regex_sources
from kit.commands.lint_scopes import scope_report
from kit.errors import KitInputError
from kit.judge.rubrics import RubricSet, load_rubrics
from kit.settings import Settings, load_settings
from kit.toolspec import tool_schemas

# A quantified group that itself holds a quantifier, e.g. (a+)+ or (\w*)*: the classic catastrophic
# backtracking shape. The runtime timeout still bounds anything this misses.
_NESTED_QUANTIFIER = regex.compile(r"\((?:[^()\\]|\\.)*[+*](?:[^()\\]|\\.)*\)(?:[+*]|\{\d*,\d*\})")


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PATH", help="a case file or a folder of them")
    parser.add_argument("--tools", metavar="FILE", help="tool schemas (default: the nearest tools.json)")
    parser.add_argument(
        "--invariants",
        metavar="FILE",
        help="named invariants (default: the settings' invariants, else the nearest invariants.yaml)",
    )
    parser.add_argument("--rubrics", metavar="FILE", help="G-Eval rubrics (default: the settings' rubrics file)")
    parser.add_argument(
        "--traces", metavar="FILE", action="append", help="traces whose agents and MCP servers the cases may name"
    )
    parser.add_argument("--gates", metavar="FILE", help="gate policy whose floors apply (default: the settings' gates)")
    parser.add_argument(
        "--labels", metavar="FILE", help="labelled answers for kit calibrate (default: PATH's labels.yaml, if any)"
    )


def _tools_named(spec_type: str, params: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for key in ("tool", "before", "after", "requires"):
        v = params.get(key)
        if isinstance(v, str):
            names.append(v)
        elif isinstance(v, list):
            names.extend(v)
    if spec_type in ("trajectory", "allowed_tools"):
        names.extend(params["tools"])
    target = params.get("target")
    if isinstance(target, str) and target.startswith("tool:"):
        names.append(target[5:])
    return names


def lint_specs(
    specs: list[CheckSpec],
    tools: set[str] | None,
    *,
    file: str | None,
    case: str | None,
    tools_file: str = "tools.json",
) -> list[KitInputError]:
    """What loading cannot see: tools missing from tools.json, regexes shaped for catastrophic backtracking."""
    problems = []
    for i, spec in enumerate(specs):
        where = f"#{i + 1} ({spec.type})" + (f" of invariant {spec.invariant!r}" if spec.invariant else "")
        if tools is not None:
            unknown = [t for t in _tools_named(spec.type, spec.params) if t not in tools]
            if unknown:
                problems.append(
                    KitInputError(f"tool {unknown[0]!r} is not in {tools_file}", file=file, case=case, check=where)
                )
        for source in (s for v in spec.params.values() for s in regex_sources(v)):  # regexes, schema patterns
            if _NESTED_QUANTIFIER.search(source):
                problems.append(
                    KitInputError(
                        f"regex {source!r} nests quantifiers and can backtrack catastrophically",
                        file=file,
                        case=case,
                        check=where,
                    )
                )
    return problems


def read_tools(path: Path | None) -> tuple[set[str] | None, KitInputError | None]:
    """The tool names of a tools.json in the kit's format or OpenAI's tool list (kit.toolspec)."""
    if path is None:
        return None, None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        return None, KitInputError(f"cannot read tool schemas: {e.strerror}", file=str(path))
    except json.JSONDecodeError as e:
        return None, KitInputError(f"not valid JSON (line {e.lineno}: {e.msg})", file=str(path))
    try:
        return set(tool_schemas(data)), None
    except ValueError as e:
        return None, KitInputError(f"not a tool list: {e}", file=str(path))


def read_rubrics(path: str | Path) -> tuple[RubricSet | None, KitInputError | None]:
    """The rubrics DeepEval applies to these cases (the settings' `rubrics`, else the one given)."""
    try:
        return load_rubrics(Path(path)), None
    except KitInputError as e:
        return None, e


def read_policy_floor(path: str | Path) -> tuple[float, KitInputError | None]:
    """gates.yaml's `hard.min_pass_fraction`, the floor of a case that sets none (its own problem, if any:
    a floor outside 0..1 there is refused like one in a case)."""
    from kit.gate.policy import GatePolicy, load_policy

    try:
        return load_policy(Path(path)).hard.min_pass_fraction, None
    except KitInputError as e:
        return GatePolicy().hard.min_pass_fraction, e


def runs_for_floor(floor: float) -> int | None:
    """The fewest runs with which a floor under 1 still allows a failed attempt (None: no floor under 1)."""
    if floor >= 1:
        return None
    return next((n for n in range(1, MAX_RUNS + 1) if math.ceil(floor * n - 1e-9) < n), None)


def floor_warnings(cases: list[Case], default_floor: float) -> list[str]:
    """Cases whose `runs` cannot express their floor: with `runs: 1` a floor of 0.8 still needs every
    attempt to pass, which is a floor of 1 in all but name."""
    out = []
    for case in cases:
        floor = case.min_pass_fraction if case.min_pass_fraction is not None else default_floor
        need = math.ceil(floor * case.runs - 1e-9)
        if 0 < floor < 1 and need >= case.runs:
            own = case.min_pass_fraction is not None
            whose = "its min_pass_fraction" if own else "gates.yaml's hard.min_pass_fraction"
            fewest = runs_for_floor(floor)
            out.append(
                str(
                    KitInputError(
                        f"runs: {case.runs} cannot express {whose} {floor:g}: {need} of {case.runs} attempts must "
                        f"pass, a floor of 1 in all but name"
                        + (f"; give it runs: {fewest} or more to allow a failed attempt" if fewest else ""),
                        file=case.file,
                        case=case.id,
                    )
                )
            )
    return out


def schema_warnings(cases: list[Case]) -> list[str]:
    """A `schema` check on a tool's calls in a case that never says the tool must be called: it passes when the
    tool is not called (it validates the calls that happened)."""
    from kit.checks.tools import schema_without_called

    return [
        str(
            KitInputError(
                f"check {label}: passes when {tool} is never called (schema validates the calls that happened); "
                f"add {{type: called, tool: {tool}}} if the case needs the call",
                file=case.file,
                case=case.id,
            )
        )
        for case, label, tool in schema_without_called(cases)
    ]


def lint_labels(root: Path, given: str | Path | None, rubrics: RubricSet, notes: list[str]) -> list[KitInputError]:
    """A labels file's problems (kit/judge/labels.py): its rubric exists, the params it needs are there, `human`
    is pass or fail. The file given, else `labels.yaml` in the linted folder when there is one."""
    from kit.judge.labels import read_labels

    path = Path(given) if given else root / "labels.yaml"
    if not given and not path.is_file():
        return []
    try:
        labels = read_labels(path, rubrics)
    except KitInputError as e:
        return [e]
    notes.append(f"{path}: {len(labels.answers)} labelled answers")
    return list(labels.problems)


@dataclass(frozen=True)
class LintReport:
    """What `kit lint` found: problems (exit 2), warnings, notes, and one line saying what was linted."""

    problems: tuple[KitInputError, ...]
    warnings: tuple[str, ...]
    notes: tuple[str, ...]
    summary: str

    @property
    def code(self) -> int:
        return 2 if self.problems else 0


def lint(
    root: Path,
    *,
    settings: Settings,
    tools: str | Path | None = None,
    rubrics: str | Path | None = None,
    gates: str | Path | None = None,
    labels: str | Path | None = None,
    traces: list[str] | None = None,
) -> LintReport:
    """Lint a case file or folder with the files its front ends would use (kit.plan): the `settings`' invariants
    file or the one found beside the cases (kit.case.invariants_of); the rubrics and gates given, else the
    settings'."""
    inv = invariants_of(root, configured=settings.invariants)
    suite = load_suite(root, inv)
    problems = list(suite.errors)
    notes: list[str] = []
    tools_path = Path(tools) if tools else find_upwards(root, "tools.json")
    tool_names, problem = read_tools(tools_path)
    if problem is not None:
        problems.append(problem)
    named = {"tools_file": str(tools_path)}
    if inv is not None and not any(e.file == str(inv) for e in suite.errors):
        # Each invariant is linted once, not once per case that lists it.
        for specs in load_invariants(inv).values():
            problems += lint_specs(specs, tool_names, file=str(inv), case=None, **named)
    for case in suite.cases:
        own = [s for s in case.checks if s.invariant is None]
        problems += lint_specs(own, tool_names, file=case.file, case=case.id, **named)
    rubric_set, problem = read_rubrics(str(rubrics or settings.rubrics))
    if problem is not None:
        problems.append(problem)
    elif rubric_set is not None:
        problems += rubric_set.lint(suite.cases)  # a rubric attached by id to a case without what it needs
        notes += [f"note: {line}" for line in rubric_set.coverage(suite.cases)]
        problems += lint_labels(root, labels, rubric_set, notes)
    default_floor, problem = read_policy_floor(str(gates or settings.gates))
    if problem is not None:
        problems.append(problem)
    scope_warnings, scope_problems = scope_report(suite.cases, tools_path, traces)
    problems += scope_problems
    n_checks = sum(len(c.checks) for c in suite.cases)
    status = "OK" if not problems else f"{len(problems)} problems"
    # Which files were used, always: a tools.json or invariants.yaml found further up is easy to miss.
    summary = (
        f"{root}: {len(suite.cases)} cases, {n_checks} checks"
        f"; invariants: {inv if inv is not None else 'none found'}"
        f"; tools: {f'{tools_path} ({len(tool_names)} tools)' if tool_names is not None else 'no tools.json found'}"
        f": {status}"
    )
    warnings = floor_warnings(suite.cases, default_floor) + scope_warnings + schema_warnings(suite.cases)
    return LintReport(tuple(problems), tuple(warnings), tuple(notes), summary)


def show(report: LintReport) -> int:
    """`kit lint`'s output: notes, warnings and problems, then what was linted; the exit code."""
    from kit.names import terminal  # names from traces and cases may hold escape sequences or CRs

    for line in report.notes:
        print(terminal(f"kit lint: {line}"))
    for line in report.warnings:
        print(terminal(f"kit lint: warning: {line}"), file=sys.stderr)
    for p in report.problems:
        print(terminal(f"kit lint: {p}"), file=sys.stderr)
    print(terminal(f"kit lint: {report.summary}"))
    return report.code


def main(args: argparse.Namespace) -> int:
    try:
        settings = load_settings({"invariants": args.invariants}, flags={"invariants": "--invariants"})
    except KitInputError as e:
        print(f"kit lint: {e}", file=sys.stderr)
        return 2
    return show(
        lint(
            Path(args.path),
            settings=settings,
            tools=args.tools,
            rubrics=getattr(args, "rubrics", None),
            gates=getattr(args, "gates", None),
            labels=getattr(args, "labels", None),
            traces=getattr(args, "traces", None),
        )
    )
