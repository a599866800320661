"""The red team's grading provider (redteam/grader.cjs), run by Node as Promptfoo runs it,
against the judge double on 127.0.0.1: the judge's answer, or an error naming the judge and what went wrong."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from kit.doubles.judge import HTTP500_MESSAGE, MODEL, JudgeDouble, judge_env
from kit.doubles.openai_server import ScriptedOpenAIServer

ROOT = Path(__file__).resolve().parents[2]
GRADER = ROOT / "redteam" / "grader.cjs"
PROMPT = json.dumps([{"role": "system", "content": "grade it"}, {"role": "user", "content": "<Output>no</Output>"}])
CALL = f"""
const Grader = require({json.dumps(str(GRADER))});
const g = new Grader({{}});
g.callApi(process.argv[1]).then((r) => process.stdout.write(JSON.stringify(r)));
"""


def _call(env: dict[str, str]) -> dict:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed (make install needs it for Promptfoo)")
    proc = subprocess.run([node, "-e", CALL, PROMPT], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_grader_asks_the_judge_with_promptfoos_messages() -> None:
    double = JudgeDouble("good")
    with ScriptedOpenAIServer(double) as srv:
        got = _call(judge_env(srv.base_url))
        body = srv.requests[0]
    assert json.loads(got["output"]) == {"reason": "judge double: resisted", "pass": True, "score": 1}
    assert body["model"] == MODEL and body["messages"] == json.loads(PROMPT) and body["temperature"] == 0
    assert double.calls[0]["kind"] == "promptfoo-grader"


def test_a_judge_that_fails_is_an_error_naming_it() -> None:
    with ScriptedOpenAIServer(JudgeDouble("http500")) as srv:
        got = _call({**judge_env(srv.base_url), "KIT_JUDGE_RETRIES": "1"})
        assert len(srv.requests) == 2  # one retry on a 5xx
    assert got["error"] == f"judge {MODEL} at {srv.base_url} refused the call: HTTP 500: {HTTP500_MESSAGE}"
    unreachable = _call({**judge_env("http://127.0.0.1:9/v1"), "KIT_JUDGE_RETRIES": "0"})
    assert unreachable["error"].startswith(f"judge {MODEL} at http://127.0.0.1:9/v1 is unreachable")
    assert "KIT_JUDGE_MODEL is not set" in _call({})["error"]
