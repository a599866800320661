"""Concurrency that you set: a user's agent is called up to `concurrency` times at once (threads for a sync
callable, an event loop for an `async def` one), across processes when they share a slots folder; a
rate-limited call is retried with backoff and the retries are counted; every call is timed."""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from kit.case import load_suite
from kit.doubles import slow_agent
from kit.runner import RunOptions, invoke, jobs_for, run_suite
from kit.runner.agents import load_agent
from kit.runner.slots import from_env, prepare

# The module (kit.runner.invoke is also the name of its function, which the package exports).
invoke_module = importlib.import_module("kit.runner.invoke")

LATENCY = 0.1
OVERLAP = 0.25  # long enough that calls meant to overlap do, even on a loaded machine

CASES = """\
id: echo
input: "hi"
runs: 12
checks: [{type: contains, text: echo}]
"""

AGENTS = """\
import asyncio, os

calls = 0

class RateLimitError(Exception):  # what openai raises, found by its class name
    pass

def limited(text):
    global calls
    calls += 1
    if calls <= int(os.environ.get("LIMITED_TIMES", "2")):
        raise RateLimitError("Error code: 429 - Rate limit reached for requests")
    return {"final_output": "echo " + text, "finish_reason": "finish", "spans": []}

class Http429(Exception):
    status_code = 429

def http_429(text):
    raise Http429("slow down")

def broken(text):
    raise ValueError("order 429 not found")

def messages(text):
    return [{"role": "user", "content": text}, {"role": "assistant", "content": "echo " + text}]

async def async_chat(text, history):
    await asyncio.sleep(0.01)
    return [{"role": "assistant", "content": f"echo {text} after {len(history)}"}]

async def async_hang(text):
    await asyncio.sleep(30)

async def async_echo(text):
    await asyncio.sleep(0.01)
    return {"final_output": "echo " + text, "finish_reason": "finish", "spans": []}
"""


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "budget.yaml").write_text(
        'id: quick\ninput: "hi"\nchecks: [{type: budget, latency_ms: 1}]\n'
        "---\n"
        'id: tokens\ninput: "hi"\nchecks: [{type: budget, tokens: 100}]\n'
    )
    (tmp_path / "rl_agents.py").write_text(AGENTS)
    (tmp_path / "counts").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "rl_agents", raising=False)  # a fresh module: its counters start at 0
    monkeypatch.setenv("SLOW_AGENT_COUNTS", str(tmp_path / "counts"))
    monkeypatch.setenv("SLOW_AGENT_LATENCY", str(LATENCY))
    monkeypatch.delenv("KIT_SLOTS_DIR", raising=False)
    monkeypatch.setattr(invoke_module, "BACKOFF_S", 0.01)
    return tmp_path


def _run(agent: str, mode: str, concurrency: int) -> list:
    jobs = jobs_for(load_suite("cases.yaml").cases)
    return run_suite(jobs, load_agent(agent), RunOptions(mode=mode, concurrency=concurrency, workers=2, timeout=10))


@pytest.mark.parametrize(
    ("agent", "mode"),
    [("sync_agent", "thread"), ("async_agent", "thread"), ("sync_agent", "process"), ("async_agent", "process")],
)
def test_calls_run_up_to_the_cap_at_once(project, agent, mode, monkeypatch):
    monkeypatch.setenv("SLOW_AGENT_LATENCY", str(OVERLAP))
    # Calls wait (up to 5 s) for 4 at once: on a loaded machine the second host can start after the first
    # host's calls would otherwise have ended. A runner that allowed fewer than 4 still fails below.
    monkeypatch.setenv("SLOW_AGENT_MEET", "4")
    outs = _run(f"kit.doubles.slow_agent:{agent}", mode, 4)
    assert [o.case_run.outcome for o in outs] == ["pass"] * 12
    counts = project / "counts"
    assert slow_agent.read(counts, "calls") == 12
    assert slow_agent.read(counts, "peak") == 4  # never more than the cap, and the cap is reached
    assert all(o.agent_s >= OVERLAP * 0.9 for o in outs)


def test_an_async_agent_gets_its_own_loop_wherever_invoke_is_called(project):
    agent = load_agent("rl_agents:async_echo")
    assert agent.is_async
    case = load_suite("cases.yaml").cases[0]
    assert invoke(agent, case, 0, timeout=5).case_run.passed  # no loop running here

    async def inside_a_running_loop():  # e.g. a host's async test runner calling invoke
        return invoke(agent, case, 0, timeout=5)

    assert asyncio.run(inside_a_running_loop()).case_run.passed


def test_processes_sharing_a_slots_folder_stay_under_one_cap(project, monkeypatch):
    monkeypatch.setenv("SLOW_AGENT_LATENCY", str(OVERLAP))
    env = {**os.environ, **prepare(3), "PYTHONPATH": os.pathsep.join([str(project), *sys.path])}
    script = (
        "from kit.case import load_suite\n"
        "from kit.runner import RunOptions, jobs_for, run_suite\n"
        "from kit.runner.agents import load_agent\n"
        "outs = run_suite(jobs_for(load_suite('cases.yaml').cases), load_agent('kit.doubles.slow_agent:sync_agent'),"
        " RunOptions(mode='thread', concurrency=3, timeout=10))\n"
        "assert all(o.case_run.passed for o in outs)\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script], cwd=project, env=env) for _ in range(2)]
    assert [p.wait(60) for p in procs] == [0, 0]
    counts = project / "counts"
    assert slow_agent.read(counts, "calls") == 24
    assert slow_agent.read(counts, "peak") == 3  # each would run 3 at once alone: together, still 3


def test_a_slot_is_freed_when_its_holder_dies(project, monkeypatch):
    monkeypatch.setenv("KIT_SLOTS_DIR", prepare(2)["KIT_SLOTS_DIR"])
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from kit.runner.slots import from_env; import time; s = from_env(); "
            "s.acquire(); s.acquire(); print('held', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
    )
    assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
    slots = from_env()
    assert slots is not None and slots.try_acquire() is None  # both taken by the other process
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    assert {slots.acquire(), slots.acquire()} == {0, 1}


def test_a_rate_limited_call_is_retried_and_the_retries_are_counted(project, monkeypatch):
    monkeypatch.setenv("LIMITED_TIMES", "2")
    case = load_suite("cases.yaml").cases[0]
    inv = invoke(load_agent("rl_agents:limited"), case, 0, timeout=5)
    assert inv.case_run.passed
    assert inv.retries == 2
    assert inv.case_run.metrics["retries"] == 2 and inv.case_run.metrics["agent_calls"] == 3


def test_retries_are_bounded_and_said(project, monkeypatch):
    monkeypatch.setenv("LIMITED_TIMES", "100")
    case = load_suite("cases.yaml").cases[0]
    inv = invoke(load_agent("rl_agents:limited"), case, 0, timeout=5)
    assert inv.case_run.outcome == "error"
    assert inv.retries == invoke_module.RETRIES
    assert "RateLimitError" in inv.case_run.error and "(after 4 rate-limit retries)" in inv.case_run.error


def test_a_429_status_is_a_rate_limit_and_other_errors_are_not_retried(project):
    case = load_suite("cases.yaml").cases[0]
    assert invoke(load_agent("rl_agents:http_429"), case, 0, timeout=5).retries == invoke_module.RETRIES
    broken = invoke(load_agent("rl_agents:broken"), case, 0, timeout=5)
    assert broken.retries == 0 and "ValueError: order 429 not found" in broken.case_run.error


def test_a_trace_without_latency_gets_the_measured_time(project, monkeypatch):
    suite = load_suite("budget.yaml")
    slow = load_agent("kit.doubles.slow_agent:sync_agent")
    inv = invoke(slow, suite.by_id()["quick"], 0, timeout=5)
    assert inv.trace["latency_ms"] >= LATENCY * 1000 * 0.9
    assert not inv.case_run.passed  # a 100 ms run is not within a 1 ms budget
    assert "latency_ms" in inv.case_run.failures[0].reason
    msgs = invoke(load_agent("rl_agents:messages"), suite.by_id()["quick"], 0, timeout=5)
    assert msgs.trace["latency_ms"] > 0


def test_a_budget_on_tokens_nobody_recorded_is_an_error(project):
    inv = invoke(load_agent("rl_agents:messages"), load_suite("budget.yaml").by_id()["tokens"], 0, timeout=5)
    [result] = inv.case_run.results
    assert result.outcome == "error" and "tokens not recorded" in result.reason


def test_an_async_agent_that_overruns_is_a_timeout_wherever_it_runs(project):
    case = load_suite("cases.yaml").cases[0]
    agent = load_agent("rl_agents:async_hang")
    t0 = time.perf_counter()
    assert invoke(agent, case, 0, timeout=0.2).case_run.error == "timeout: the agent ran longer than 0.2s"
    for mode in ("thread", "process"):
        outs = run_suite(jobs_for([case], runs=2), agent, RunOptions(mode=mode, timeout=0.2, concurrency=2))
        assert [o.case_run.error for o in outs] == ["timeout: the agent ran longer than 0.2s"] * 2
    assert time.perf_counter() - t0 < 15  # not the 30 s the agent would sleep


def test_invoke_holds_a_shared_slot_for_every_call(project, monkeypatch):
    """What DeepEval and the Promptfoo provider call: with KIT_SLOTS_DIR set, their calls share the cap."""
    monkeypatch.setenv("KIT_SLOTS_DIR", prepare(2)["KIT_SLOTS_DIR"])
    monkeypatch.setenv("SLOW_AGENT_LATENCY", str(OVERLAP))
    agent = load_agent("kit.doubles.slow_agent:sync_agent")
    case = load_suite("cases.yaml").cases[0]
    threads = [threading.Thread(target=invoke, args=(agent, case, i), kwargs={"timeout": 5}) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    counts = project / "counts"
    assert (slow_agent.read(counts, "calls"), slow_agent.read(counts, "peak")) == (6, 2)


def test_an_async_agent_holds_a_conversation(project):
    (project / "chat.yaml").write_text(
        'id: chat\nturns: ["one", "two"]\nchecks: [{type: contains, text: "echo two after 2"}]\n'
    )
    agent = load_agent("rl_agents:async_chat")
    [case] = load_suite("chat.yaml").cases
    assert invoke(agent, case, 0, timeout=5).case_run.passed
    outs = run_suite(jobs_for([case]), agent, RunOptions(mode="process", timeout=5))
    assert outs[0].case_run.passed, outs[0].case_run.failures
