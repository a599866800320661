"""Each front end's subprocess, started with the plan document (KIT_PLAN) and nothing else of the kit's in a
minimal environment, runs the plan: the DeepEval session stores the faulted agent's run under its label and the
plan's evals id, the Promptfoo provider runs the faulted agent on a case named relative to the project (not to
where it started), and the Promptfoo store hook's `kit ingest` stores the eval in the plan's store under the plan's
evals id, with the plan's rules. No KIT_* copy of a setting travels beside the document any more
(`Plan.env()`), so anything still reading one would miss the variant, the store or the evals id here. (The
red team's provider is started the same way in test_plan_travels.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_ingest import PROMPTFOO_FILE

from kit.plan import PLAN_ENV, make_plan
from kit.settings import load_settings
from kit.store import open_store

ROOT = Path(__file__).resolve().parents[2]
EVALS_ID = "evals-plan-only"
REFUND_CHECK = "called_at_most:issue_refund"

SESSION = """
import json
from deepeval_metrics import api
from deepeval_metrics.runner import plan
from deepeval_metrics.session import EvalSession

p = plan()
session = EvalSession.begin(p, "deepeval", agent=p.agent_name, model=p.model, kind=p.kind)
log = api.run_agent(api.load_cases().by_id()["refund-happy-path"], 0)
session.record(log)
session.finish()
print(json.dumps([session.run_id, [r.name for r in log.judged.results if r.outcome != "pass"]]))
"""
PROVIDER = """
import json
from kit_promptfoo.agent_provider import call_api
r = call_api("My ceramic pour-over set from order ORD-100001 arrived damaged. Please refund it - yes, go ahead.",
             {"config": {"reference": True}},
             {"vars": {"case_file": "golden/cases/refunds.yaml", "case_id": "refund-happy-path"}})
print(json.dumps([c["check"] for c in r["metadata"]["kit"]["verdict"]["checks"] if c["outcome"] != "pass"]))
"""
HOOK = """
import json, sys
from kit_promptfoo.store_hook import afterAll
afterAll(json.load(open(sys.argv[1])))
"""


@pytest.fixture(scope="module")
def only_the_plan(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path, Path]:
    """A minimal environment holding the plan document alone (the reference agent with double_refund), a
    folder to start in that is not the project, and the plan's store."""
    here = tmp_path_factory.mktemp("elsewhere")
    store = here / "evals.duckdb"
    settings = load_settings({"store": str(store)}, root=ROOT, env={})
    plan = make_plan(settings, variant="double_refund").derive(evals_id=EVALS_ID)
    env = {"PATH": os.environ["PATH"], "HOME": str(here), "PYTHONDONTWRITEBYTECODE": "1", **plan.env()}
    assert [k for k in env if k.startswith("KIT_")] == [PLAN_ENV]
    return env, here, store


def _run(code: str, env: dict[str, str], cwd: Path, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_the_deepeval_session_runs_and_stores_the_plan(only_the_plan) -> None:
    env, here, store = only_the_plan
    run_id, failed = json.loads(_run(SESSION, env, here).strip().splitlines()[-1])
    assert REFUND_CHECK in failed
    with open_store(store).connect() as con:
        agent, evals_id, status = con.execute(
            "SELECT agent, evals_id, status FROM runs WHERE run_id = ?", [run_id]
        ).fetchone()
    assert (agent, evals_id, status) == ("reference:deterministic+double_refund", EVALS_ID, "complete")


def test_the_promptfoo_provider_runs_the_plans_agent_on_the_plans_case(only_the_plan) -> None:
    env, here, _ = only_the_plan
    assert REFUND_CHECK in json.loads(_run(PROVIDER, env, here).strip().splitlines()[-1])


def test_the_promptfoo_store_hook_ingests_into_the_plans_store(only_the_plan) -> None:
    env, here, store = only_the_plan
    data = PROMPTFOO_FILE
    context = {"evalId": data["evalId"], "results": data["results"]["results"], "prompts": [], "config": data["config"]}
    (here / "context.json").write_text(json.dumps(context))
    _run(HOOK, {**env, "KIT_PROMPTFOO_RESULTS": str(here / "out.json")}, here, str(here / "context.json"))
    with open_store(store).connect() as con:
        evals_id, rules = con.execute("SELECT evals_id, rules FROM runs WHERE source = 'promptfoo'").fetchone()
    assert evals_id == EVALS_ID
    assert json.loads(rules)["policy_file"] == str(ROOT / "gates.yaml")  # the plan's gates, recorded
