"""DeepEval metrics over the kit's oracle (hard gates) and G-Eval rubrics (soft gates).

    from kit_deepeval import kit_test_case, oracle_metrics, rubric_metrics, load_rubrics

Names load on first use: `kit_deepeval.rubrics` (the YAML model) never imports DeepEval, so other
front ends (Promptfoo) can read the rubric file without paying DeepEval's ~2 s import.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "KitTestCase": "kit_deepeval.testcase",
    "kit_test_case": "kit_deepeval.testcase",
    "trace_of": "kit_deepeval.testcase",
    "OracleMetric": "kit_deepeval.oracle",
    "oracle_metrics": "kit_deepeval.oracle",
    "RubricMetric": "kit_deepeval.rubric_metric",
    "rubric_metrics": "kit_deepeval.rubric_metric",
    "Rubric": "kit_deepeval.rubrics",
    "RubricSet": "kit_deepeval.rubrics",
    "load_rubrics": "kit_deepeval.rubrics",
    "CaseLog": "kit_deepeval.caselog",
    "EvalSession": "kit_deepeval.session",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kit_deepeval' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = sorted(_LAZY)
