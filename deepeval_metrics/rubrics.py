"""G-Eval rubrics declared in YAML (`golden/rubrics.yaml`): the kit's rubric model (kit/rubrics.py says what
a rubric needs and which cases it applies to), under the name this adapter has always exported."""

from __future__ import annotations

from kit.rubrics import NEEDS, PARAMS, AppliesTo, Rubric, RubricSet, case_context, load_rubrics, retrieved

__all__ = ["NEEDS", "PARAMS", "AppliesTo", "Rubric", "RubricSet", "case_context", "load_rubrics", "retrieved"]
