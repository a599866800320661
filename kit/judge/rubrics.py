"""G-Eval rubrics declared in YAML (`golden/rubrics.yaml`): what a rubric asks, what it needs, which cases
it applies to. Pure pydantic: the kit lints rubrics here and the DeepEval adapter judges them.

rubrics:
  - name: resolves_request
    evaluation_steps: [...]                                           # or criteria: "..."
    params: [input, actual_output]                                    # what the judge sees
    threshold: 0.7                                                    # a run passes at score >= this
    applies_to: {cases: ["refund-*"], tags: [refund]}                 # default: every case

`params` are DeepEval's evaluation params, and they are also what the rubric needs: a case (or a run) that
lacks one of them is not judged by the rubric at all - never an error, never a pass:

    expected_output     the case's `reference`
    context             the case's `context` (the facts the agent is given), one `key: value` line each
    retrieval_context   what the run retrieved: the results of its tool calls that did not fail
    tools_called        the run's tool calls (always there: a run that called none shows an empty list)

`kit lint` reports a rubric attached to a case by its exact id in `applies_to.cases` when the case lacks a
field the rubric needs; a glob or a tag selects the cases that have what it needs.
"""

from __future__ import annotations

import fnmatch
import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kit import yamlio
from kit.case import Case
from kit.errors import KitInputError, field_errors
from kit.judge import rubric_hash
from kit.trace import Trace

# The LLMTestCase fields a rubric may show the judge (DeepEval's SingleTurnParams values).
PARAMS = ("input", "actual_output", "expected_output", "context", "retrieval_context", "tools_called")
# The params a case or a run may lack, and what in the kit supplies each (said in lint messages).
NEEDS = {
    "expected_output": "a `reference`",
    "context": "a `context`",
    "retrieval_context": "tool results (a run that retrieved something)",
}
# Needs only a run can tell: a case may or may not retrieve anything.
RUN_NEEDS = frozenset({"retrieval_context"})
_GLOB = set("*?[")


class AppliesTo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cases: tuple[str, ...] = ()  # case ids, or globs of them
    tags: tuple[str, ...] = ()

    def matches(self, case: Case) -> bool:
        if not self.cases and not self.tags:
            return True
        by_id = any(fnmatch.fnmatchcase(case.id, pattern) for pattern in self.cases)
        return by_id or bool(set(self.tags) & set(case.tags))

    def names(self, case: Case) -> bool:
        """The case is attached by its exact id (not a glob, not a tag): its author meant this case."""
        return any(p == case.id and not (_GLOB & set(p)) for p in self.cases)


def input_text(value: Any) -> str:
    """A case's input as the judge reads it: a string as is, a list of {role, content} messages as a
    transcript (`role: content` lines), anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(f"{m.get('role', 'user')}: {m.get('content', '')}" for m in value if isinstance(m, dict))
    return json.dumps(value, ensure_ascii=False)


def case_context(case: Case) -> list[str]:
    """The case's context as DeepEval's `context`: one `key: value` line per entry."""
    return [f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in case.context.items()]


def retrieved(trace: Trace) -> list[str]:
    """What a run retrieved, as DeepEval's `retrieval_context`: each successful tool call's result."""
    out = []
    for span in trace.tool_calls:
        if span.error is None and span.output not in (None, "", [], {}):
            out.append(span.output if isinstance(span.output, str) else json.dumps(span.output, ensure_ascii=False))
    return out


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.:-]+$")
    criteria: str | None = None
    evaluation_steps: list[str] | None = None
    params: list[str] = Field(default_factory=lambda: ["input", "actual_output"])
    threshold: float = Field(default=0.5, ge=0, le=1)
    applies_to: AppliesTo = Field(default_factory=AppliesTo)

    @model_validator(mode="after")
    def _checked(self) -> Rubric:
        if not self.criteria and not self.evaluation_steps:
            raise ValueError("give criteria or evaluation_steps")
        unknown = [p for p in self.params if p not in PARAMS]
        if unknown:
            raise ValueError(f"unknown params {unknown} (known: {', '.join(PARAMS)})")
        if not self.params:
            raise ValueError("params must name at least one test-case field")
        return self

    @property
    def needs(self) -> tuple[str, ...]:
        """The params a case or run may lack: without them the rubric is not judged."""
        return tuple(p for p in self.params if p in NEEDS)

    def missing(self, case: Case, trace: Trace | None = None) -> list[str]:
        """The needed params this case lacks (and this run, when its trace is given)."""
        have = {
            "expected_output": bool(case.reference and case.reference.strip()),
            "context": bool(case.context),
            "retrieval_context": trace is None or bool(retrieved(trace)),
        }
        return [p for p in self.needs if not have[p]]

    def applies(self, case: Case, trace: Trace | None = None) -> bool:
        return self.applies_to.matches(case) and not self.missing(case, trace)

    @property
    def text(self) -> dict[str, Any]:
        """Everything that changes what the judge is asked: hashed to tell rubric versions apart."""
        return {
            "criteria": self.criteria,
            "evaluation_steps": self.evaluation_steps,
            "params": self.params,
            "threshold": self.threshold,
        }

    @property
    def hash(self) -> str:
        return rubric_hash(self.text)


class RubricSet(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rubrics: list[Rubric] = Field(default_factory=list)
    file: str | None = None

    @model_validator(mode="after")
    def _unique(self) -> RubricSet:
        names = [r.name for r in self.rubrics]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate rubric names {dupes}")
        return self

    def for_case(self, case: Case, trace: Trace | None = None) -> list[Rubric]:
        """The rubrics that apply to this case (and run, given its trace) and have every field they need."""
        return [r for r in self.rubrics if r.applies(case, trace)]

    def lint(self, cases: list[Case]) -> list[KitInputError]:
        """A rubric attached to a case by its exact id while the case lacks a field the rubric needs."""
        problems = []
        for rubric in self.rubrics:
            for case in cases:
                lacks = [p for p in rubric.missing(case) if p not in RUN_NEEDS]
                if lacks and rubric.applies_to.names(case):
                    what = ", ".join(f"{p} ({NEEDS[p]})" for p in lacks)
                    problems.append(
                        KitInputError(
                            f"rubric {rubric.name!r} ({self.file}) needs {what}, which the case does not have",
                            file=case.file,
                            case=case.id,
                            check=f"rubric:{rubric.name}",
                        )
                    )
        return problems

    def coverage(self, cases: list[Case]) -> list[str]:
        """Per rubric that some selected cases cannot feed: how many it judges, and why not the others."""
        lines = []
        for rubric in self.rubrics:
            chosen = [c for c in cases if rubric.applies_to.matches(c)]
            short = [c for c in chosen if [p for p in rubric.missing(c) if p not in RUN_NEEDS]]
            if short:
                lines.append(
                    f"rubric:{rubric.name} judges {len(chosen) - len(short)} of the {len(chosen)} cases it "
                    f"selects; {len(short)} lack {', '.join(rubric.needs)} (e.g. {short[0].id})"
                )
        return lines


def load_rubrics(path: str | Path) -> RubricSet:
    """The rubric file, or KitInputError naming the file and the rubric. A missing file means no rubrics."""
    p = Path(path)
    if not p.exists():
        return RubricSet(file=str(p))
    try:
        data = yamlio.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise KitInputError(f"malformed YAML: {str(exc).splitlines()[0]}", file=str(p)) from None
    except (UnicodeDecodeError, RecursionError) as exc:
        raise KitInputError(f"cannot read: {type(exc).__name__}", file=str(p)) from None
    if not isinstance(data, dict):
        raise KitInputError("a rubric file is a mapping with a `rubrics:` list", file=str(p))
    try:
        return RubricSet.model_validate({**data, "file": str(p)})
    except ValidationError as exc:
        err = field_errors(exc)[0]
        loc = list(err.loc)
        where = None
        if len(loc) >= 2 and loc[0] == "rubrics" and isinstance(loc[1], int):
            raw = (data.get("rubrics") or [])[loc[1]]
            name = raw.get("name") if isinstance(raw, dict) else None
            where = f"rubric:{name}" if name else f"rubric #{loc[1] + 1}"
            loc = loc[2:]
        field = ".".join(str(x) for x in loc)
        message = f"{field}: {err.text}" if field else err.text
        raise KitInputError(message, file=str(p), check=where) from None
