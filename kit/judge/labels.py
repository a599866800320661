"""Labels: answers a person judged against a rubric, what `kit calibrate` measures the judge against.

A labels file (e.g. `golden/labels.yaml`) is one YAML list; each item names its rubric, gives the fields
the rubric's `params` show the judge, and the person's verdict:

    - id: refund-happy-path                # optional; items are named `#<n>` without it
      rubric: refund_explained             # a rubric of the rubrics file
      input: "Please refund order ORD-1."  # the rubric's params: input, actual_output, expected_output,
      actual_output: "Refunded $40 ..."    #   context (a list of lines or a mapping), retrieval_context
      expected_output: "Refund of $40 ..." #   (a list), tools_called (a list of {name, input_parameters,
      human: pass                          #   output}, or of names; empty when no tool was called)
      note: "states amount and order"      # optional: why

Every problem of a file is reported at once, each naming the file, the item and the rubric; the good items
beside a bad one are still read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from kit import yamlio
from kit.errors import KitInputError, first_error
from kit.judge.rubrics import Rubric, RubricSet, case_context, input_text, retrieved

Human = Literal["pass", "fail"]
# The params an item must give with something in it; tools_called may be an empty list (no tool called).
_MAY_BE_EMPTY = frozenset({"tools_called"})


class ToolCalled(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    input_parameters: dict[str, Any] | None = None
    output: Any = None


class Label(BaseModel):
    """One labelled answer. `human` is None only in a skeleton (`kit calibrate --export`) still to fill."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = Field(default=None, min_length=1)
    rubric: str = Field(min_length=1)
    human: Human | None = None
    note: str | None = None
    input: str | None = None
    actual_output: str | None = None
    expected_output: str | None = None
    context: list[str] | dict[str, Any] | None = None
    retrieval_context: list[str] | None = None
    tools_called: list[ToolCalled] | None = None

    @field_validator("tools_called", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [{"name": v} if isinstance(v, str) else v for v in value]
        return value

    def fields(self, rubric: Rubric) -> dict[str, Any]:
        """What the judge sees for this answer: the rubric's params, as the soft gates' test case holds them
        (context as `key: value` lines, tool calls as {name, input_parameters, output})."""
        out: dict[str, Any] = {}
        for param in rubric.params:
            value = getattr(self, param)
            if param == "context" and isinstance(value, Mapping):
                value = [
                    f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in value.items()
                ]
            elif param == "tools_called":
                value = [c.model_dump() for c in value or []]
            out[param] = value
        return out


@dataclass(frozen=True)
class LabelledAnswer:
    """A valid label with its name in the file and its rubric."""

    key: str
    label: Label
    rubric: Rubric

    @property
    def human(self) -> Human:
        assert self.label.human is not None  # a LabelledAnswer is only made of a filled-in label
        return self.label.human


@dataclass(frozen=True)
class LabelFile:
    file: str
    answers: tuple[LabelledAnswer, ...]
    problems: tuple[KitInputError, ...]


def _missing(label: Label, rubric: Rubric) -> list[str]:
    lacks = []
    for param in rubric.params:
        value = getattr(label, param)
        if value is None or (param not in _MAY_BE_EMPTY and value in ("", [], {})):
            lacks.append(param)
    return lacks


def read_labels(path: str | Path, rubrics: RubricSet) -> LabelFile:
    """Every item of a labels file checked against the rubrics: the rubric exists, the params it needs are
    there, `human` is pass or fail. A file that cannot be read at all raises KitInputError naming it."""
    p = Path(path)
    file = str(p)
    try:
        data = yamlio.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise KitInputError("no such labels file", file=file) from None
    except yaml.YAMLError as exc:
        raise KitInputError(f"malformed YAML: {str(exc).splitlines()[0]}", file=file) from None
    except (UnicodeDecodeError, RecursionError) as exc:
        raise KitInputError(f"cannot read: {type(exc).__name__}", file=file) from None
    if not isinstance(data, list) or not data:
        raise KitInputError("a labels file is a non-empty YAML list of labelled answers", file=file)
    by_name = {r.name: r for r in rubrics.rubrics}
    answers: list[LabelledAnswer] = []
    problems: list[KitInputError] = []
    seen: set[str] = set()
    for i, raw in enumerate(data):
        key = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw["id"] else f"#{i + 1}"
        name = raw.get("rubric") if isinstance(raw, dict) else None
        where = {"file": file, "case": key, "check": f"rubric:{name}" if isinstance(name, str) and name else None}
        if not isinstance(raw, dict):
            problems.append(KitInputError(f"item #{i + 1} is not a mapping", **where))
            continue
        try:
            label = Label.model_validate(raw)
        except ValidationError as exc:
            field, msg, _ = first_error(exc)
            problems.append(KitInputError(f"{field}: {msg}" if field else msg, **where))
            continue
        if key in seen:
            problems.append(KitInputError(f"duplicate id {key!r}", **where))
            continue
        seen.add(key)
        rubric = by_name.get(label.rubric)
        if rubric is None:
            known = ", ".join(sorted(by_name)) or f"none: {rubrics.file} has no rubrics"
            problems.append(KitInputError(f"no rubric {label.rubric!r} in {rubrics.file} (known: {known})", **where))
            continue
        lacks = _missing(label, rubric)
        if lacks:
            problems.append(
                KitInputError(f"rubric {rubric.name!r} shows the judge {', '.join(lacks)}: the item lacks it", **where)
            )
            continue
        if label.human is None:
            problems.append(KitInputError("human is empty: a person's verdict, pass or fail", **where))
            continue
        answers.append(LabelledAnswer(key, label, rubric))
    return LabelFile(file, tuple(answers), tuple(problems))


class _SkeletonDumper(yaml.SafeDumper):
    """Writes None as nothing, so `human:` stands empty for a person to fill in."""


_SkeletonDumper.add_representer(type(None), lambda d, _: d.represent_scalar("tag:yaml.org,2002:null", ""))


def skeleton(items: list[dict[str, Any]]) -> str:
    """Unlabelled answers as a labels file, `human:` left empty."""
    body = yaml.dump(items, Dumper=_SkeletonDumper, sort_keys=False, allow_unicode=True, width=100)
    head = (
        "# Answers to label: read each one against its rubric (the rubrics file) and write human: pass or\n"
        "# human: fail. Then: kit calibrate THIS_FILE\n"
    )
    return head + body


def export_item(case_id: str, attempt: int, rubric: Rubric, case: Any, trace: Any) -> dict[str, Any]:
    """One judged answer of a stored run as a label to fill: the fields its rubric shows the judge, taken
    from the case (input, reference, context) and the run's trace (output, tool calls, retrieved results)."""
    values: dict[str, Any] = {
        "input": input_text(case.input),
        "actual_output": trace.output,
        "expected_output": case.reference,
        "context": case_context(case) or None,
        "retrieval_context": retrieved(trace) or None,
        "tools_called": [
            {
                "name": s.name,
                "input_parameters": dict(s.input or {}),
                "output": s.output if s.error is None else {"error": s.error},
            }
            for s in trace.tool_calls
        ],
    }
    item: dict[str, Any] = {"id": f"{case_id}@{attempt}:{rubric.name}", "rubric": rubric.name}
    item.update({p: values[p] for p in rubric.params})
    item["human"] = None
    return item
