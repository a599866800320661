"""An agent that misbehaves: exits, returns a cyclic object, patches the oracle or changes directory. Each
is an error of its own run at most; the other runs, the verdicts and the store are untouched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kit.case import load_suite
from kit.runner import RunOptions, jobs_for, run_suite
from kit.runner.agents import load_agent
from kit.store import open_store

CASES = """\
id: a
input: "a"
checks: [{type: contains, text: hello}]
---
id: b
input: "b"
checks: [{type: contains, text: hello}]
---
id: c
input: "c"
checks: [{type: contains, text: hello}]
"""

AGENT = """\
import os, sys

def ok(text):
    return {"final_output": "hello " + text, "finish_reason": "finish", "spans": []}

def exits(text):
    if text == "b":
        sys.exit(0)
    return ok(text)

def interrupts(text):
    if text == "b":
        raise KeyboardInterrupt
    return ok(text)

def cyclic(text):
    trace = ok(text)
    if text == "b":
        loop = {}
        loop["self"] = loop
        trace["spans"] = [{"kind": "tool", "name": "lookup", "output": loop}]
    return trace

def patches(text):
    import kit.evaluate
    from kit.result import Result
    kit.evaluate.run_check = lambda spec, trace: Result(spec.label, True, "patched")
    return {"final_output": "goodbye", "finish_reason": "finish", "spans": []}

def dies(text):
    if text == "b":
        os._exit(3)
    return ok(text)

def slow(text):
    import time
    open(text + ".started", "w").close()
    time.sleep(60)  # the Ctrl-C always lands in this call, however late a loaded machine sends it
    return ok(text)

def wanders(text):
    os.makedirs(os.environ["ELSEWHERE"], exist_ok=True)
    os.chdir(os.environ["ELSEWHERE"])
    return ok(text)
"""

MODES = ["serial", "thread", "process"]


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "bad_agent.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "bad_agent", raising=False)  # a fresh module: its counters start at 0
    monkeypatch.setenv("ELSEWHERE", str(tmp_path / "elsewhere"))
    monkeypatch.delenv("KIT_RUN_ID", raising=False)
    monkeypatch.delenv("KIT_SLOTS_DIR", raising=False)
    return tmp_path


def _outcomes(fn: str, mode: str, cases: list[str] | None = None) -> dict[str, tuple[str, str | None]]:
    suite = load_suite("cases.yaml")
    chosen = [c for c in suite.cases if cases is None or c.id in cases]
    outs = run_suite(jobs_for(chosen), load_agent(f"bad_agent:{fn}"), RunOptions(mode=mode, workers=2, timeout=10))
    return {o.case_run.case_id: (o.case_run.outcome, o.case_run.error) for o in outs}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fn", ["exits", "interrupts"])
def test_an_agent_that_exits_is_an_error_run_and_the_others_go_on(project, mode, fn):
    got = _outcomes(fn, mode)
    assert got["a"] == ("pass", None) and got["c"] == ("pass", None)
    outcome, error = got["b"]
    assert outcome == "error"
    assert ("SystemExit" if fn == "exits" else "KeyboardInterrupt") in error


@pytest.mark.parametrize("mode", MODES)
def test_a_single_job_that_exits_is_still_a_result(project, mode):
    assert _outcomes("exits", mode, cases=["b"])["b"][0] == "error"


def _kit_run(project: Path, fn: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project), *sys.path]), "KIT_STORE": ".kit/evals.duckdb"}
    argv = [sys.executable, "-m", "kit.cli", "run", "--cases", "cases.yaml", "--agent", f"bad_agent:{fn}", "-q"]
    return subprocess.run([*argv, *args], cwd=project, env=env, capture_output=True, text=True, timeout=120)


def _stored(project: Path) -> dict[str, str]:
    with open_store(project / ".kit" / "evals.duckdb").connect() as con:
        return dict(con.execute("SELECT case_id, outcome FROM case_results").fetchall())


def test_kit_run_with_an_exiting_agent_fails_with_every_result(project):
    done = _kit_run(project, "exits", "--pool", "serial")
    assert done.returncode == 1, done.stderr
    assert _stored(project) == {"a": "pass", "b": "error", "c": "pass"}


@pytest.mark.parametrize("mode", MODES)
def test_a_cyclic_result_is_an_error_of_its_own_run(project, mode):
    got = _outcomes("cyclic", mode)
    assert got["a"][0] == got["c"][0] == "pass"
    assert got["b"][0] == "error" and "not JSON" in got["b"][1]


def test_a_cyclic_result_loses_no_other_result_in_the_store(project):
    done = _kit_run(project, "cyclic", "--json")
    assert done.returncode == 1, done.stderr
    assert _stored(project) == {"a": "pass", "b": "error", "c": "pass"}
    assert [r["case_id"] for r in json.loads(done.stdout)["results"]] == ["a", "b", "c"]


def test_an_agent_that_patches_the_oracle_does_not_change_its_verdicts(project):
    got = _outcomes("patches", "process")
    assert {outcome for outcome, _ in got.values()} == {"fail"}  # "goodbye" does not contain "hello"


@pytest.mark.parametrize("mode", ["serial", "thread"])  # in `process` the agent runs in a host of its own
def test_an_agent_that_changes_directory_does_not_move_the_store(project, mode):
    done = _kit_run(project, "wanders", "--pool", mode)
    assert done.returncode == 0, done.stderr
    assert _stored(project) == {"a": "pass", "b": "pass", "c": "pass"}
    assert not (project / "elsewhere" / ".kit").exists()


_SIGINT_DEFAULT_EXEC = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


def test_a_real_ctrl_c_still_stops_a_serial_run(project):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(project), *sys.path]), "KIT_STORE": "s.duckdb"}
    argv = [sys.executable, "-m", "kit.cli", "run", "--cases", "cases.yaml", "--agent", "bad_agent:slow", "-q"]
    # Started as a terminal starts it, with SIGINT at its default: a suite run in the background of a
    # non-interactive shell has SIGINT ignored, and a process keeps an ignored SIGINT (POSIX), as `kit run` does.
    as_typed = [sys.executable, "-c", _SIGINT_DEFAULT_EXEC, *argv[1:]]
    proc = subprocess.Popen([*as_typed, "--pool", "serial"], cwd=project, env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (project / "a.started").exists():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    try:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) != 0
    finally:
        proc.kill()
    assert not (project / "b.started").exists()  # the run stopped instead of calling the next cases


def test_a_host_process_that_dies_fails_its_own_calls_and_the_run_goes_on(project):
    suite = load_suite("cases.yaml")
    outs = run_suite(
        jobs_for(suite.cases), load_agent("bad_agent:dies"), RunOptions(mode="process", concurrency=1, timeout=10)
    )
    got = {o.case_run.case_id: (o.case_run.outcome, o.case_run.error) for o in outs}
    assert got["a"] == got["c"] == ("pass", None)
    assert got["b"] == ("error", "the agent's host process died (exit code 3)")
