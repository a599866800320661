"""G-Eval rubrics declared in YAML (`golden/rubrics.yaml`). Pure pydantic: no DeepEval import here.

floor: 0.8                      # default soft-gate floor: the share of judged runs that must pass
rubrics:
  - name: resolves_request
    criteria: "Does the reply resolve what the customer asked for?"   # or evaluation_steps: [...]
    params: [input, actual_output]                                    # what the judge sees
    threshold: 0.7                                                    # a run passes at score >= this
    applies_to: {cases: ["refund-*"], tags: [refund]}                 # default: every case
    floor: 0.9                                                        # optional, per rubric
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from kit.case import Case
from kit.errors import KitInputError, field_errors
from kit.judge import rubric_hash

# The LLMTestCase fields a rubric may show the judge (DeepEval's SingleTurnParams values).
PARAMS = ("input", "actual_output", "expected_output", "context", "retrieval_context", "tools_called")


class AppliesTo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cases: list[str] = Field(default_factory=list)  # case-id globs
    tags: list[str] = Field(default_factory=list)

    def matches(self, case: Case) -> bool:
        if not self.cases and not self.tags:
            return True
        by_id = any(fnmatch.fnmatchcase(case.id, pattern) for pattern in self.cases)
        return by_id or bool(set(self.tags) & set(case.tags))


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

    def for_case(self, case: Case) -> list[Rubric]:
        return [r for r in self.rubrics if r.applies_to.matches(case)]


def load_rubrics(path: str | Path) -> RubricSet:
    """The rubric file, or KitInputError naming the file and the rubric. A missing file means no rubrics."""
    p = Path(path)
    if not p.exists():
        return RubricSet(file=str(p))
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise KitInputError(f"malformed YAML: {str(exc).splitlines()[0]}", file=str(p)) from None
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
