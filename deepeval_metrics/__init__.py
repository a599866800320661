"""DeepEval metrics over the kit's oracle (hard gates) and G-Eval rubrics (soft gates).

Importing this package imports DeepEval (~2 s); `kit` itself never does.

    from deepeval_metrics import kit_test_case, oracle_metrics, rubric_metrics, load_rubrics
"""

from __future__ import annotations

from deepeval_metrics.oracle import OracleMetric, oracle_metrics
from deepeval_metrics.rubric_metric import RubricMetric, rubric_metrics
from deepeval_metrics.rubrics import Rubric, RubricSet, load_rubrics
from deepeval_metrics.testcase import KitTestCase, kit_test_case, trace_of

__all__ = [
    "KitTestCase",
    "OracleMetric",
    "Rubric",
    "RubricMetric",
    "RubricSet",
    "kit_test_case",
    "load_rubrics",
    "oracle_metrics",
    "rubric_metrics",
    "trace_of",
]
