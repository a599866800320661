"""`kit serve --rubrics`: soft rubrics judge a sample of the complete traces (by trace id), through the judge double
over real HTTP, apart from the hard invariants that judge every trace; without a judge they are `skipped`, saying
so, never a pass; the plan's judge is the one the command asks."""

from __future__ import annotations

import argparse
import time

import pytest
from test_receiver import send, served, stored, wait_judged

from kit.doubles.judge import MODEL, ScriptedJudge, judge_env
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.errors import KitInputError
from kit.judge import NO_JUDGE_REASON, JudgeConfig
from kit.judge.rubrics import Rubric
from kit.receiver.soft import SoftJudge, sampled
from kit.store import open_store

RUBRICS = [
    Rubric(name="polite", criteria="The answer is polite.", threshold=0.7),
    Rubric(name="concise", criteria="The answer is short.", threshold=0.7),
    Rubric(name="grounded", criteria="The answer says only what the tools returned.", threshold=0.7),
]


def _soft_rows(folder) -> dict[tuple[str, str], tuple[str, str]]:
    with open_store(folder / "store.duckdb").connect() as con:
        rows = con.execute(
            """SELECT trace_id, "check", outcome, reason FROM production_checks WHERE "check" LIKE 'rubric:%'"""
        ).fetchall()
    return {(t, c): (o, r) for t, c, o, r in rows}


def test_a_sample_of_traces_is_judged_by_the_rubrics_over_http_apart_from_the_invariants(tmp_path):
    n = 16
    script = ScriptedJudge([{"match": "(polite)", "scores": [9] * n}, {"match": "(concise)", "scores": [2] * n}])
    with ScriptedOpenAIServer(script) as judge_server:
        judge = JudgeConfig(model=MODEL, base_url=judge_server.base_url, api_key="k", retries=0, timeout_s=5)
        soft = SoftJudge(RUBRICS, judge, 0.5, NO_JUDGE_REASON)
        with served(tmp_path, soft=soft) as (receiver, front):
            ids = send(front, n, breaking={3})
            wait_judged(receiver, n)
            picked = {t for t in ids if sampled(t, 0.5)}
            assert 0 < len(picked) < n  # a sample, by trace id
            deadline = time.monotonic() + 10
            while receiver.status()["soft"] < 3 * len(picked) and time.monotonic() < deadline:
                time.sleep(0.02)  # the judge's answers come on a thread of their own, then go to the store
    assert set(stored(tmp_path)) == set(ids)  # every trace held to the invariants
    got = _soft_rows(tmp_path)
    assert {t for t, _ in got} == picked  # the rubrics saw the sample only, each trace's once
    for t in picked:
        assert got[(t, "rubric:polite")] == ("pass", "score 0.90 (threshold 0.70): judge double: scored 9/10")
        assert got[(t, "rubric:concise")] == ("fail", "score 0.20 (threshold 0.70): judge double: scored 2/10")
        outcome, reason = got[(t, "rubric:grounded")]  # nothing scripted for it: the double's HTTP 500
        assert outcome == "error" and "HTTP 500" in reason and "no scripted entry" in reason
    assert len(script.calls) == 3 * len(picked)
    # The report: the invariants' pass rates and failing traces as before, the rubrics apart, as soft.
    from kit.commands.report import ReportRequest, report

    shown = report(ReportRequest(store=tmp_path / "store.duckdb")).text or ""
    hard, _, soft_part = shown.partition("soft rubrics")
    assert "rubric:" not in hard  # a failed rubric is no failing invariant
    assert f"production (kit serve): {n} traces judged, {n - 1} passed" in hard
    k = len(picked)
    assert f"rubric:concise   0 pass, {k} fail, 0 error" in soft_part
    assert f"rubric:polite    {k} pass, 0 fail, 0 error" in soft_part


def test_without_a_judge_the_sampled_rubrics_are_skipped_saying_why_never_a_pass(tmp_path):
    with served(tmp_path, soft=SoftJudge(RUBRICS[:1], None, 1.0, NO_JUDGE_REASON)) as (receiver, front):
        ids = send(front, 3, breaking=set())
        wait_judged(receiver, 3)
    assert _soft_rows(tmp_path) == {(t, "rubric:polite"): ("skipped", NO_JUDGE_REASON) for t in ids}
    from kit.commands.report import ReportRequest, report

    shown = report(ReportRequest(store=tmp_path / "store.duckdb")).text or ""
    assert "rubric:polite  0 pass, 0 fail, 0 error, 3 skipped (no judge configured" in shown


def test_the_command_takes_the_plans_judge_and_refuses_what_it_cannot_honour(tmp_path):
    from kit.commands.serve import _soft
    from kit.settings import load_settings

    rubrics = tmp_path / "rubrics.yaml"
    rubrics.write_text("rubrics:\n  - name: polite\n    criteria: The answer is polite.\n")
    env = judge_env("http://127.0.0.1:9/v1")
    soft = _soft(argparse.Namespace(rubrics=str(rubrics), judge_sample=0.25), load_settings(root=tmp_path, env=env))
    assert soft is not None and soft.rate == 0.25 and [r.name for r in soft.rubrics] == ["polite"]
    assert soft.judge is not None and (soft.judge.model, soft.judge.base_url) == (MODEL, "http://127.0.0.1:9/v1")
    none = _soft(argparse.Namespace(rubrics=str(rubrics), judge_sample=None), load_settings(root=tmp_path, env={}))
    assert none is not None and none.judge is None and none.rate == 1.0
    bad = [
        ({"rubrics": None, "judge_sample": 0.5}, env, "give --rubrics FILE"),
        ({"rubrics": str(rubrics), "judge_sample": 1.5}, env, "0 < RATE <= 1"),
        ({"rubrics": str(tmp_path / "none.yaml"), "judge_sample": None}, env, "no such rubrics file"),
        ({"rubrics": str(rubrics), "judge_sample": None}, {"KIT_JUDGE_MODEL": "gpt-4o"}, "OpenAI-compatible"),
    ]
    for given, variables, words in bad:
        with pytest.raises(KitInputError, match=words.replace("(", r"\(").replace("+", r"\+")):
            _soft(argparse.Namespace(**given), load_settings(root=tmp_path, env=variables))
