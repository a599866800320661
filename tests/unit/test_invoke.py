"""One `invoke` for every front end: the kit's runner, the DeepEval stage and the Promptfoo provider give
the same outcome for an agent that raises, hangs, returns garbage or returns a good trace."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from deepeval_metrics import runner as deepeval_runner
from kit.case import Case, load_suite
from kit.runner import Invocation, Job, RunOptions, invoke, run_suite
from kit.runner.agents import load_agent
from kit_promptfoo import agent_provider

TIMEOUT = 0.4

AGENT = """\
import time

def good(text):
    return {"final_output": "ORD-1 has shipped", "finish_reason": "finish",
            "spans": [{"kind": "tool", "name": "lookup_order", "input": {"order_id": "ORD-1"}}]}

def wrong(text):
    return {"final_output": "no idea", "finish_reason": "finish", "spans": []}

def raises(text):
    raise RuntimeError("backend unavailable")

def hangs(text):
    time.sleep(30)

def garbage(text):
    return {"spans": [{"kind": "teleport"}]}

def junk(text):
    return 42
"""

CASES = """\
id: order
input: "Where is ORD-1?"
checks:
  - {type: called, tool: lookup_order}
  - {type: contains, text: shipped}
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "front_agent.py").write_text(AGENT)
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "invariants.yaml").write_text("{}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("KIT_AGENT_TIMEOUT", str(TIMEOUT))
    monkeypatch.delenv("KIT_VARIANT", raising=False)
    return tmp_path


def _case(project: Path) -> Case:
    return load_suite(project / "cases.yaml").by_id()["order"]


def via_invoke(project: Path, fn: str) -> Invocation:
    return invoke(load_agent(f"front_agent:{fn}"), _case(project), 0, timeout=TIMEOUT)


def via_thread(project: Path, fn: str) -> Invocation:
    """Off the main thread, where no SIGALRM can reach the agent."""
    box: list[Invocation] = []
    worker = threading.Thread(target=lambda: box.append(via_invoke(project, fn)))
    worker.start()
    worker.join(TIMEOUT + 5)
    assert box, "invoke did not return off the main thread"
    return box[0]


def via_runner(project: Path, fn: str) -> Invocation:
    return invoke(load_agent(f"front_agent:{fn}"), _case(project), 0, timeout=TIMEOUT)


def via_deepeval(project: Path, fn: str, monkeypatch: pytest.MonkeyPatch) -> Invocation:
    monkeypatch.setenv("KIT_AGENT", f"front_agent:{fn}")
    deepeval_runner.plan.cache_clear()
    return deepeval_runner.run_case(_case(project), 0)


def via_promptfoo(project: Path, fn: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("KIT_AGENT", f"front_agent:{fn}")
    vars_ = {"case_id": "order", "case_file": str(project / "cases.yaml")}
    return agent_provider.call_api("Where is ORD-1?", {"config": {}}, {"vars": vars_})


ERRORS = {
    "raises": "the agent raised RuntimeError: backend unavailable (at front_agent.py:11)",
    "hangs": f"timeout: the agent ran longer than {TIMEOUT:g}s",
    "junk": "the agent returned int, expected a trace dict, a Trace or an OpenAI message list",
}


@pytest.mark.parametrize("fn", ["raises", "hangs", "junk", "garbage"])
def test_an_agent_fault_is_the_same_error_run_from_every_front_end(project, monkeypatch, fn):
    started = time.perf_counter()
    runs = {
        "invoke": via_invoke(project, fn),
        "thread": via_thread(project, fn),
        "runner": via_runner(project, fn),
        "deepeval": via_deepeval(project, fn, monkeypatch),
    }
    response = via_promptfoo(project, fn, monkeypatch)
    # Five runs, each bounded by the timeout: a hang costs about 5 x TIMEOUT, never the agent's 30 s.
    assert time.perf_counter() - started < 5 * TIMEOUT + 5
    errors = {where: run.case_run.error for where, run in runs.items()}
    first = errors["invoke"]
    assert first is not None
    if fn in ERRORS:
        assert first == ERRORS[fn]
    else:  # a malformed trace names what is wrong with it
        assert first.startswith("the agent returned a malformed trace:") and "kind" in first
    assert errors == dict.fromkeys(runs, first)
    assert all(run.trace is None and run.case_run.outcome == "error" for run in runs.values())
    assert response == {"error": f"case 'order': {first}"}


@pytest.mark.parametrize("fn", ["good", "wrong"])
def test_a_trace_gets_the_same_verdict_from_every_front_end(project, monkeypatch, fn):
    runs = {
        "invoke": via_invoke(project, fn),
        "thread": via_thread(project, fn),
        "runner": via_runner(project, fn),
        "deepeval": via_deepeval(project, fn, monkeypatch),
    }
    response = via_promptfoo(project, fn, monkeypatch)
    verdict = runs["invoke"].case_run.to_dict()
    assert verdict["passed"] is (fn == "good")
    assert [c["outcome"] for c in verdict["checks"]] == (["pass", "pass"] if fn == "good" else ["fail", "fail"])
    assert {where: run.case_run.to_dict() for where, run in runs.items()} == dict.fromkeys(runs, verdict)
    traces = [run.trace for run in runs.values()] + [response["metadata"]["trace"]]
    assert all(t is not None and (t["case_id"], t["attempt"]) == ("order", 0) for t in traces)
    assert response["metadata"]["kit"]["verdict"] == {**verdict, "outcome": "pass" if fn == "good" else "fail"}


def test_the_thread_pool_times_out_a_hung_agent_itself(project):
    """A pool thread is not the main thread: invoke's own watch ends the run, not the pool's grace period."""
    case = _case(project)
    started = time.perf_counter()
    outs = run_suite(
        [Job(case, 0), Job(case, 1)], load_agent("front_agent:hangs"), RunOptions(timeout=0.3, mode="thread", workers=2)
    )
    assert [o.case_run.error for o in outs] == ["timeout: the agent ran longer than 0.3s"] * 2
    assert time.perf_counter() - started < 2.0  # the pool would only give up after 0.3 s + its 2 s grace


def test_the_provider_times_out_a_hanging_user_agent(project, monkeypatch):
    monkeypatch.setenv("KIT_AGENT", "front_agent:hangs")
    monkeypatch.setenv("KIT_AGENT_TIMEOUT", "0.5")
    started = time.perf_counter()
    r = agent_provider.call_api("Where is ORD-1?", {"config": {}}, {"vars": {}})
    assert time.perf_counter() - started < 2.0
    assert r == {"error": "case 'promptfoo': timeout: the agent ran longer than 0.5s"}
