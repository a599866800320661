"""DeepEval metrics over the kit's oracle (hard gates) and G-Eval rubrics (soft gates), and the small public
API a DeepEval test file of your own uses (deepeval_metrics.api documents every parameter):

    import pytest
    import deepeval_metrics as kit

    SUITE = kit.load_cases()                      # the settings' cases ([tool.kit] cases), or a path

    @pytest.mark.parametrize(("case", "attempt"), kit.case_params(SUITE))
    def test_case(case, attempt):
        log = kit.run_agent(case, attempt)        # or kit.replay(trace, case): a recorded run
        kit.assert_run(log, kit.oracle_metrics(case, log) + kit.case_rubric_metrics(case, log))

- load_cases(path=None) -> Suite; case_params(suite) -> pytest params (case, attempt);
- which_agent(spec=None) -> Agent; run_agent(case, attempt=0, *, agent=None, timeout=None) -> CaseLog;
  replay(trace, case, attempt=None) -> CaseLog;
- test_case(log) -> the DeepEval test case (kit_test_case(trace, case) underneath);
- oracle_metrics(case, log=None): one hard metric per check or named invariant, recording into `log`;
- case_rubric_metrics(case, log=None, *, rubrics=None, judge=None): the rubrics that apply, soft;
- assert_run(log, metrics): deepeval.assert_test, with a run that gave no trace a failure, a skipped one
  skipped.

Results reach the kit's store through the conftest `kit init` writes (`from deepeval_metrics.pytest_plugin
import *`): every CaseLog a test makes is stored when the test ends.

    from deepeval_metrics import kit_test_case, oracle_metrics, rubric_metrics, load_rubrics

Names load on first use: `kit.judge.rubrics` (the YAML model) never imports DeepEval, so other
front ends (Promptfoo) can read the rubric file without paying DeepEval's ~2 s import.
"""

from __future__ import annotations

from kit.lazy import loader

_LAZY = {
    "load_cases": "deepeval_metrics.api",
    "case_params": "deepeval_metrics.api",
    "which_agent": "deepeval_metrics.api",
    "run_agent": "deepeval_metrics.api",
    "replay": "deepeval_metrics.api",
    "test_case": "deepeval_metrics.api",
    "case_rubric_metrics": "deepeval_metrics.api",
    "assert_run": "deepeval_metrics.api",
    "KitTestCase": "deepeval_metrics.testcase",
    "kit_test_case": "deepeval_metrics.testcase",
    "trace_of": "deepeval_metrics.testcase",
    "OracleMetric": "deepeval_metrics.oracle",
    "oracle_metrics": "deepeval_metrics.oracle",
    "RubricMetric": "deepeval_metrics.rubric_metric",
    "rubric_metrics": "deepeval_metrics.rubric_metric",
    "Rubric": "kit.judge.rubrics",
    "RubricSet": "kit.judge.rubrics",
    "load_rubrics": "kit.judge.rubrics",
    "CaseLog": "deepeval_metrics.caselog",
    "hard": "deepeval_metrics.own_metric",
    "EvalSession": "deepeval_metrics.session",
}


__getattr__ = loader(__name__, _LAZY, globals())

__all__ = sorted(_LAZY)
