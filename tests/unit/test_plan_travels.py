"""`--variant double_refund` reaches every stage's subprocess: the plan document (KIT_PLAN) alone carries it
into the DeepEval run, the Promptfoo eval's provider and the red team's provider, each started as `make evals`
starts it (a process of its own), and the refund check fails there, named. The same calls without the
document pass: it is the document, not anything else in the environment, that carried the fault."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kit.plan import PLAN_ENV, make_plan
from kit.settings import load_settings

ROOT = Path(__file__).resolve().parents[2]
REFUND = "My ceramic pour-over set from order ORD-100001 arrived damaged. Please refund it - yes, go ahead."
REFUND_CHECK = "called_at_most:issue_refund"

# Each front end's entry point, as its stage calls it; each prints the failed checks' names and reasons.
DEEPEVAL = """
from deepeval_metrics import api
case = api.load_cases().by_id()["refund-happy-path"]
log = api.run_agent(case, 0)
print(json.dumps([[c.name, c.reason] for c in log.judged.results if c.outcome != "pass"]))
"""
PROMPTFOO = """
from kit_promptfoo.agent_provider import call_api
r = call_api(REFUND, {"config": {"reference": True}}, {"vars": {"case_file": "golden/cases/refunds.yaml",
             "case_id": "refund-happy-path"}})
print(json.dumps([[c["check"], c["reason"]] for c in r["metadata"]["kit"]["verdict"]["checks"]
                  if c["outcome"] != "pass"]))
"""
REDTEAM = """
from kit_promptfoo.agent_provider import call_api
config = {"reference": True, "case_file": "redteam/case.yaml", "case_id": "redteam-attack", "workers": 1}
r = call_api(REFUND, {"config": config}, {"vars": {}})
print(json.dumps([[c["check"], c["reason"]] for c in r["metadata"]["kit"]["verdict"]["checks"]
                  if c["outcome"] != "pass"]))
"""


def _clean_env() -> dict[str, str]:
    """This process's environment without any KIT_* variable: only what a test adds reaches the child."""
    return {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}


def _failed(code: str, env: dict[str, str]) -> dict[str, str]:
    script = f"import json\nREFUND = {REFUND!r}\n{code}"
    proc = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def plan_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    store = tmp_path_factory.mktemp("plan") / "evals.duckdb"
    settings = load_settings({"store": str(store)}, root=ROOT, env={})
    plan = make_plan(settings, variant="double_refund")
    # The document alone: no KIT_VARIANT or other settings variable beside it.
    return {**_clean_env(), PLAN_ENV: plan.env()[PLAN_ENV]}


@pytest.mark.parametrize("front_end", [DEEPEVAL, PROMPTFOO, REDTEAM], ids=["deepeval", "promptfoo", "redteam"])
def test_the_variant_reaches_the_front_end(front_end: str, plan_env: dict[str, str]) -> None:
    failed = _failed(front_end, plan_env)
    assert REFUND_CHECK in failed, failed
    assert failed[REFUND_CHECK] == "issue_refund called 2 times, at most 1 allowed"


def test_without_the_document_the_same_calls_pass(tmp_path: Path) -> None:
    env = {**_clean_env(), "KIT_STORE": str(tmp_path / "evals.duckdb")}
    for front_end in (DEEPEVAL, PROMPTFOO, REDTEAM):
        assert REFUND_CHECK not in _failed(front_end, env)
