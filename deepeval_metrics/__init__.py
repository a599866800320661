"""DeepEval metrics over the kit's oracle (hard gates) and G-Eval rubrics (soft gates).

    from deepeval_metrics import kit_test_case, oracle_metrics, rubric_metrics, load_rubrics

Names load on first use: `deepeval_metrics.rubrics` (the YAML model) never imports DeepEval, so other
front ends (Promptfoo) can read the rubric file without paying DeepEval's ~2 s import.
"""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "KitTestCase": "deepeval_metrics.testcase",
    "kit_test_case": "deepeval_metrics.testcase",
    "trace_of": "deepeval_metrics.testcase",
    "OracleMetric": "deepeval_metrics.oracle",
    "oracle_metrics": "deepeval_metrics.oracle",
    "RubricMetric": "deepeval_metrics.rubric_metric",
    "rubric_metrics": "deepeval_metrics.rubric_metric",
    "Rubric": "deepeval_metrics.rubrics",
    "RubricSet": "deepeval_metrics.rubrics",
    "load_rubrics": "deepeval_metrics.rubrics",
    "CaseLog": "deepeval_metrics.caselog",
    "EvalSession": "deepeval_metrics.session",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'deepeval_metrics' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = sorted(_LAZY)
