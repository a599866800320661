"""`make evals` with a judge configured, as a team with a judge runs it: offline (a network namespace with
loopback only), KIT_JUDGE_BASE_URL / KIT_JUDGE_MODEL / KIT_JUDGE_API_KEY pointing at the scripted judge
double on 127.0.0.1 (kit/doubles/judge.py, started inside the namespace). Both kinds of judged check are
covered: DeepEval's G-Eval rubrics and Promptfoo's red-team graders (which ask the judge through
redteam/grader.cjs).

Each run is in a copy of the repository whose red team runs its attacks under the basic strategy only: the
other strategies re-encode the same attacks, each graded by the same plugin's grader, so they would only ask
the judge more of the same (README's `make evals` runs them all, with no judge)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest
from shared_runs import basic_red_team, copy_repo, environ, shared_run

from kit.doubles.judge import HTTP500_MESSAGE, MODEL

pytestmark = pytest.mark.skipif(
    sys.platform != "linux", reason="needs unshare -n (a Linux network namespace) to run make evals offline"
)
ROOT = Path(__file__).resolve().parents[2]
# A few golden cases for the failing judges (whose red team is cut short too: _judged_repo).
SMALL = ROOT / "golden" / "cases" / "orders.yaml"
# The good judge's cases: one golden file whose cases every rubric applies to, the refund rubric to those with a
# reference only (the whole golden set asked the judge five times as often for the same three rubrics).
JUDGED = ROOT / "golden" / "cases" / "refunds.yaml"


def _evals(
    tmp: Path, mode: str, repo: Path, cases: Path | None = None, only: str | None = None
) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`make evals` in `repo` with the judge double in `mode`; `only`: the stages to run (KIT_MAKE_ONLY, as the
    Makefile's one-stage targets set it), lint first all the same."""
    if shutil.which("unshare") is None or shutil.which("ip") is None:
        pytest.fail("this test needs unshare and ip (util-linux, iproute2) to run offline")
    store = tmp / "store.duckdb"
    make = ["make", "--no-print-directory", "evals", f"EVALS_OUT={tmp / 'out'}"]
    make += [f"CASES={cases}"] if cases else []
    double = [sys.executable, "-m", "kit.doubles.judge", mode, "--calls", str(tmp / "calls.jsonl"), "--", *make]
    env = _env()
    env["KIT_STORE"] = str(store)
    if only:
        env["KIT_MAKE_ONLY"] = only
    script = f"ip link set lo up && exec {shlex.join(double)}"
    proc = subprocess.run(
        ["unshare", "-n", "sh", "-c", script], cwd=repo, env=env, capture_output=True, text=True, timeout=3600
    )
    return proc, store


def _env() -> dict[str, str]:
    return {k: v for k, v in environ().items() if not k.startswith(("KIT_", "VIRTUAL_ENV"))}


def _rows(store: Path, sql: str) -> list[dict[str, Any]]:
    con = duckdb.connect(str(store), read_only=True)
    try:
        cur = con.execute(sql)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


SOFT = """SELECT r.source, k.run_id, k.case_id, k.attempt, k."check", k.outcome, k.score, k.reason,
                 (SELECT count(*) FROM judge_calls j WHERE j.run_id = k.run_id AND j.case_id = k.case_id
                    AND j.attempt = k.attempt AND j."check" = k."check") AS audited,
                 (SELECT any_value(j.judge_model) FROM judge_calls j WHERE j.run_id = k.run_id
                    AND j.case_id = k.case_id AND j.attempt = k.attempt AND j."check" = k."check") AS judge_model,
                 (SELECT any_value(j.raw_answer) FROM judge_calls j WHERE j.run_id = k.run_id
                    AND j.case_id = k.case_id AND j.attempt = k.attempt AND j."check" = k."check") AS raw_answer
          FROM check_results k JOIN runs r USING (run_id) WHERE k.gate = 'soft'"""


def _calls(tmp: Path) -> Counter[str]:
    lines = (tmp / "calls.jsonl").read_text().splitlines() if (tmp / "calls.jsonl").exists() else []
    return Counter(json.loads(line)["kind"] for line in lines)


def _judged_repo(tmp: Path, plugins: int | None = None) -> Path:
    """A copy of the repository whose red team runs the basic strategy only, and only its first `plugins`
    plugins (None: every plugin, so every plugin's grader asks the judge): a team's smaller red team."""
    repo = tmp / "repo"
    repo.mkdir()
    copy_repo(repo)
    basic_red_team(repo, _env(), plugins)
    return repo


# The stages of every judged run: no Promptfoo eval of the golden cases, whose checks are the oracle's and ask no
# judge (test_tools_as_typed runs it as typed).
JUDGED_STAGES = "kit deepeval redteam"


# Two streams of `make evals` runs at the same time, each in its own copy (each red team of the reference
# agent writes the same generated file in its checkout, so one checkout runs one at a time): the good judge
# on golden cases and every red-team plugin; each failing judge on a few cases and two plugins.
@shared_run("judge")
def good(tmp: Path) -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    repo = _judged_repo(tmp)  # every plugin
    proc, store = _evals(tmp, "good", repo, repo / JUDGED.relative_to(ROOT), only=JUDGED_STAGES)
    return proc, store, tmp


@shared_run("judge-copy")
def failing_judges(tmp: Path) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    repo = _judged_repo(tmp, plugins=2)
    runs = {}
    for mode in ("bad", "http500", "malformed"):
        (tmp / mode).mkdir()
        runs[mode] = _evals(tmp / mode, mode, repo, repo / SMALL.relative_to(ROOT), only=JUDGED_STAGES)
    return runs


def test_a_judge_that_scores_well_passes_on_golden_cases(good):
    proc, store, tmp = good
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "make evals: PASSED" in proc.stdout
    assert "judge FAILED" not in proc.stdout
    soft = _rows(store, SOFT)
    by_source = Counter(r["source"] for r in soft)
    assert by_source["deepeval"] > 0 and by_source["promptfoo"] > 0, by_source  # G-Eval and red-team graders
    # Every soft row judged: none an error, none skipped for want of a judge or a field.
    assert Counter(r["outcome"] for r in soft) == Counter({"pass": len(soft)}), Counter(r["outcome"] for r in soft)
    assert {r["check"] for r in soft if r["source"] == "deepeval"} == {
        "rubric:resolves_request",
        "rubric:tone_courteous_and_plain",
        "rubric:refund_explained",
    }
    # Every judged score has its audit row; DeepEval's names the judge's model and keeps its raw answer.
    assert all(r["audited"] == 1 for r in soft), [r for r in soft if r["audited"] != 1][:3]
    for r in (r for r in soft if r["source"] == "deepeval"):
        assert r["judge_model"] == MODEL and r["score"] == pytest.approx(0.9) and '"score": 9' in r["raw_answer"]
    calls = _calls(tmp)
    assert calls["geval"] == by_source["deepeval"] and calls["promptfoo-grader"] > 0, calls


def test_the_refund_rubric_judges_only_cases_with_a_reference(good):
    _, store, _ = good
    judged = _rows(
        store,
        """SELECT DISTINCT k.case_id FROM check_results k JOIN runs r USING (run_id)
           WHERE r.source = 'deepeval' AND k."check" = 'rubric:refund_explained'""",
    )
    from kit.case import load_suite

    with_reference = {c.id for c in load_suite(JUDGED).cases if c.reference and "refund" in c.tags}
    assert with_reference != {c.id for c in load_suite(JUDGED).cases}  # some without one, left unjudged
    assert {r["case_id"] for r in judged} == with_reference and with_reference


def test_a_judge_that_scores_badly_fails_and_names_the_rubric(failing_judges):
    proc, store = failing_judges["bad"]
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-2000:]  # make's code for a failed recipe
    assert "make evals: FAILED" in proc.stdout
    assert "soft gate rubric:resolves_request: pass rate 0.00 under its floor" in proc.stdout
    soft = _rows(store, SOFT)
    assert {r["outcome"] for r in soft if r["source"] == "deepeval"} == {"fail"}
    # The red team's graders said the attacks succeeded (Promptfoo passes a plain refusal without asking):
    # their soft gates fail, named, on the gated run; the oracle's hard gates still pass.
    graded = [r for r in soft if r["source"] == "promptfoo"]
    assert graded and "fail" in {r["outcome"] for r in graded} and "error" not in {r["outcome"] for r in graded}
    assert re.search(
        r"soft gate (DebugAccess|PolicyViolation|PIILeak|SqlInjection|ShellInjection|Excessive"
        r"Agency|PromptExtraction|Harmful)\S*: pass rate",
        proc.stdout,
    ), proc.stdout[-3000:]


@pytest.mark.parametrize("mode", ["http500", "malformed"])
def test_a_broken_judge_is_an_error_the_hard_gates_decide_and_the_summary_says_so(failing_judges, mode: str):
    proc, store = failing_judges[mode]
    out = proc.stdout
    soft = _rows(store, SOFT)
    rubric = [r for r in soft if r["source"] == "deepeval"]
    assert rubric and {r["outcome"] for r in rubric} == {"error"}, Counter(r["outcome"] for r in rubric)
    message = HTTP500_MESSAGE if mode == "http500" else "gave a malformed answer"
    assert all(message in r["reason"] and MODEL in r["reason"] for r in rubric), rubric[0]["reason"]
    # Red-team graders: an error with the judge's message, or a pass where Promptfoo needed no judge (a refusal).
    graded = [r for r in soft if r["source"] == "promptfoo"]
    errors = [r for r in graded if r["outcome"] == "error"]
    assert errors and {r["outcome"] for r in graded} <= {"error", "pass"}, Counter(r["outcome"] for r in graded)
    if mode == "http500":
        assert all(HTTP500_MESSAGE in r["reason"] and MODEL in r["reason"] for r in errors), errors[0]["reason"]
    # The hard gates decide: the reference agent passes them, so the build passes, and says the judge failed.
    assert "== judge FAILED" in out and "rubric:resolves_request: the judge failed on" in out
    assert proc.returncode == 0, out[-4000:] + proc.stderr[-2000:]
    assert "make evals: PASSED" in out
