"""The judge's calls (DeepEval G-Eval through the kit's judge model) recorded and replayed beside the agent's,
under `_judge/<case id>.json` by attempt: a replay with the judge double stopped gives the recorded scores."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("DEEPEVAL_TELEMETRY_OPT_OUT", "1")
os.environ.setdefault("DEEPEVAL_DISABLE_DOTENV", "1")

from deepeval_metrics.caselog import CaseLog
from deepeval_metrics.rubric_metric import RubricMetric
from deepeval_metrics.testcase import kit_test_case
from kit.case import parse_case
from kit.doubles.judge import MODEL, ScriptedJudge
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.judge import judge_config
from kit.judge.rubrics import Rubric
from kit.recording import Recordings, install, read, uninstall
from kit.trace import parse_trace

KEY = "judge-key-NEVER-WRITTEN-77"
POLITE = Rubric(name="polite", evaluation_steps=["Is the Actual Output polite?"], params=["actual_output"])


def _verdicts(judge: object, attempts: range) -> list[tuple[str | None, float | None, str | None]]:
    case = parse_case({"id": "desk/c", "input": "hi", "checks": []}, file="cases.yaml", base_dir=None, invariants={})
    out = []
    for a in attempts:
        log = CaseLog(case, a)
        log.trace = parse_trace({"case_id": "desk/c", "attempt": a, "final_output": "Your refund is on its way."})
        metric = RubricMetric(POLITE, judge, log)  # type: ignore[arg-type]
        metric.samples = 1
        metric.measure(kit_test_case(log.trace, case))
        soft = log.soft["rubric:polite"]
        out.append((soft.outcome, soft.score, soft.reason if soft.outcome == "error" else None))
    return out


def test_the_judge_replays_its_recorded_scores_with_its_double_stopped(tmp_path: Path) -> None:
    double = ScriptedJudge([{"match": "refund is on its way", "scores": [9, 2]}])
    try:
        with ScriptedOpenAIServer(double, host="127.0.0.2") as srv:
            env = {"KIT_JUDGE_BASE_URL": srv.base_url, "KIT_JUDGE_MODEL": MODEL, "KIT_JUDGE_API_KEY": KEY}
            judge = judge_config({**env, "KIT_JUDGE_RETRIES": "0", "KIT_JUDGE_TIMEOUT": "5"})
            install(Recordings("record", tmp_path, "desk-model-2025-01-01"))
            recorded = _verdicts(judge, range(2))
        assert [v[0] for v in recorded] == ["pass", "fail"]  # the judge's sample differs per attempt

        install(Recordings("replay", tmp_path, "desk-model-2025-01-01"))
        assert _verdicts(judge, range(2)) == recorded
        saved = read(tmp_path, "_judge/desk/c")
        assert saved is not None and saved.model == MODEL and sorted(saved.attempts) == ["0", "1"]
        assert all(KEY not in p.read_text() for p in tmp_path.rglob("*.json"))

        missed = _verdicts(judge, range(2, 3))[0]
        assert missed[0] == "error" and "recording miss" not in str(missed[2])
        assert "case '_judge/desk/c' attempt 2" in str(missed[2]) and "no recording of this attempt" in str(missed[2])
    finally:
        uninstall()
