"""The soft gates' judge, asked about labelled answers: what `kit calibrate` runs (as a tool command, so the
kit itself never imports DeepEval), so that a calibration measures the very path the soft gates judge by:
the same G-Eval prompt, the same judge model wrapper, the same K-sample majority.

    python -m deepeval_metrics.calibrate < request.json

The request (one JSON object on stdin): {"rubrics": FILE, "samples": K, "items": [{"key", "rubric",
"fields": {param: value}}]}. The answer: one JSON line per item on stdout, in order:
{"key", "rubric", "rubric_hash", "outcome", "calls": [JudgeCall fields...]}. Exit 2 (the reason on stderr)
when no judge is configured or the request is bad; the judge failing on an item is that item's `error`.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from typing import Any

from deepeval_metrics.offline import quiet_offline


def _test_case(fields: dict[str, Any]) -> Any:
    from deepeval.test_case import LLMTestCase, ToolCall

    values = dict(fields)
    if "tools_called" in values:
        values["tools_called"] = [
            ToolCall(name=c["name"], input_parameters=c.get("input_parameters"), output=c.get("output"))
            for c in values["tools_called"] or []
        ]
    values.setdefault("input", "")
    values.setdefault("actual_output", "")
    return LLMTestCase(**values)


def main() -> int:
    quiet_offline()
    from deepeval_metrics.rubric_metric import geval_sample, sampled_verdict
    from kit.errors import KitInputError
    from kit.judge import NO_JUDGE_REASON
    from kit.judge.rubrics import load_rubrics
    from kit.plan import current_plan

    try:
        request = json.loads(sys.stdin.read())
        rubrics = {r.name: r for r in load_rubrics(request["rubrics"]).rubrics}
        samples = int(request["samples"])
        items = list(request["items"])
        judge = current_plan().judge  # the plan `kit calibrate` handed over (KIT_PLAN)
    except KitInputError as e:
        print(f"calibrate: {e}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, TypeError) as e:
        print(f"calibrate: bad request on stdin: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if judge is None:
        print(f"calibrate: {NO_JUDGE_REASON}", file=sys.stderr)
        return 2
    for item in items:
        rubric = rubrics.get(item["rubric"])
        if rubric is None:
            print(f"calibrate: item {item['key']}: no rubric {item['rubric']!r}", file=sys.stderr)
            return 2
        once = geval_sample(rubric, judge, _test_case(item["fields"]))
        verdict = sampled_verdict(rubric, judge, samples, once)
        line = {
            "key": item["key"],
            "rubric": rubric.name,
            "rubric_hash": rubric.hash,
            "outcome": verdict.outcome,
            "calls": [asdict(c) for c in verdict.calls],
        }
        print(json.dumps(line, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
