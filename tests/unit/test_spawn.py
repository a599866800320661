"""A user's agent runs in hosts started with spawn, on every platform: a fresh interpreter that imports the agent
by name and gets its cases as the agent sees them, so nothing depends on what a fork would have inherited (on
macOS a fork after httpx read the proxy settings through the Objective-C runtime can crash the child). Sync,
`async def`, openai-SDK (httpx) and framework agents all run whole through `run_suite` in such hosts; the
reference agent runs in the same hosts and gets the verdicts it gets in one process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.runner import Job, RunOptions, run_suite
from kit.runner.agents import load_agent, reference_agent
from kit.runner.hosted import for_agent
from tests.unit.test_frameworks import CASES as DESK_CASES
from tests.unit.test_frameworks import desk_model

ROOT = Path(__file__).resolve().parents[2]

AGENTS = """\
import os
import sys

MARK = "as imported"


def _where(text):
    seen = f"pid={os.getpid()} mark={MARK} pytest_loaded={'_pytest' in sys.modules}"
    return [{"role": "user", "content": text}, {"role": "assistant", "content": seen}]


def where(text):
    return _where(text)


async def where_async(text):
    import asyncio

    await asyncio.sleep(0)
    return _where(text)


def openai_sdk(text):
    from openai import OpenAI

    client = OpenAI(base_url=os.environ["SPAWN_MODEL_URL"], api_key="offline", max_retries=0)
    reply = client.chat.completions.create(model="spawn-model", messages=[{"role": "user", "content": text}])
    return [{"role": "user", "content": text}, {"role": "assistant", "content": reply.choices[0].message.content}]
"""

CASES = """\
id: where
input: "where am I?"
runs: 4
checks:
  - {type: contains, text: "mark=as imported"}
  - {type: contains, text: "pytest_loaded=False"}
---
id: model
input: "say hello"
runs: 3
checks: [{type: contains, text: "hello from the double"}]
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "cases.yaml").write_text(CASES)
    (tmp_path / "spawn_agents.py").write_text(AGENTS)
    monkeypatch.chdir(tmp_path)
    yield tmp_path
    sys.modules.pop("spawn_agents", None)


def _jobs(path: str | Path, case_id: str | None = None) -> list[Job]:
    suite = load_suite(path)
    assert not suite.errors
    return [Job(c, a) for c in suite.cases if case_id in (None, c.id) for a in range(c.runs)]


def _said(outs: list[Any]) -> list[str]:
    return [o.trace["final_output"] for o in outs if o.trace]


@pytest.mark.parametrize("name", ["where", "where_async"])
def test_a_host_is_a_fresh_interpreter_that_imported_the_agent_by_name(project: Path, name: str) -> None:
    agent = load_agent(f"spawn_agents:{name}")
    assert agent.is_async == (name == "where_async")
    # What a fork would carry into the host: this process's change to the agent's module, and pytest.
    sys.modules["spawn_agents"].MARK = "changed by the parent"
    outs = run_suite(_jobs("cases.yaml", "where"), agent, RunOptions(mode="process", workers=2, concurrency=2))
    assert [o.case_run.error for o in outs] == [None] * 4
    assert all(o.case_run.passed for o in outs), [r.reason for o in outs for r in o.case_run.failures]
    pids = {int(text.split()[0].removeprefix("pid=")) for text in _said(outs)}
    assert pids and os.getpid() not in pids and len(pids) <= 2


def test_an_openai_sdk_agent_runs_in_spawned_hosts_after_the_parent_used_httpx(project: Path, monkeypatch) -> None:
    from openai import OpenAI

    with ScriptedOpenAIServer(lambda body: "hello from the double") as srv:
        monkeypatch.setenv("SPAWN_MODEL_URL", srv.base_url)
        # The parent has made an httpx client (and read the proxy settings) before the hosts start: the case
        # where a forked child may crash on macOS.
        parent_client = OpenAI(base_url=srv.base_url, api_key="offline", max_retries=0)
        assert parent_client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        outs = run_suite(
            _jobs("cases.yaml", "model"),
            load_agent("spawn_agents:openai_sdk"),
            RunOptions(mode="process", workers=2, concurrency=3, timeout=30),
        )
        assert [o.case_run.error for o in outs] == [None] * 3
        assert all(o.case_run.passed for o in outs)
        assert len(srv.requests) == 1 + 3


@pytest.mark.parametrize("entry", ["langgraph_state", "pydantic_ai_messages", "agents_result"])
def test_a_framework_agent_runs_in_a_spawned_host(tmp_path: Path, monkeypatch, entry: str) -> None:
    (tmp_path / "desk.yaml").write_text(DESK_CASES)
    monkeypatch.delenv("DESK_BUG", raising=False)
    monkeypatch.syspath_prepend(str(ROOT / "tests" / "unit"))
    with ScriptedOpenAIServer(desk_model) as srv:
        monkeypatch.setenv("DESK_MODEL_URL", srv.base_url)
        outs = run_suite(
            _jobs(tmp_path / "desk.yaml"),
            load_agent(f"_desk_frameworks:{entry}"),
            # One host, both cases in it at once: each host imports the framework (~2 CPU-s); two hosts: the tests above.
            RunOptions(mode="process", workers=1, concurrency=2, timeout=60),
        )
    assert [(o.case_run.case_id, o.case_run.error) for o in outs] == [("refund", None), ("status", None)]
    assert all(o.case_run.passed for o in outs), [r.reason for o in outs for r in o.case_run.failures]


def test_the_reference_agent_runs_in_spawned_hosts_and_is_judged_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its verdicts in hosts are the verdicts of the same runs in this process (`serial`)."""
    monkeypatch.chdir(ROOT)
    jobs = _jobs(ROOT / "golden" / "cases" / "refunds.yaml")[:6]
    agent = reference_agent()

    def verdicts(outs: list[Any]) -> list[tuple[str, int, bool, tuple[str, ...]]]:
        return [(o.case_run.case_id, o.case_run.attempt, o.case_run.passed, tuple(r.name for r in o.case_run.failures))
                for o in outs]  # fmt: skip

    hosted = verdicts(run_suite(jobs, agent, RunOptions(mode="process", workers=2, timeout=60)))
    assert [v[:2] for v in hosted] == [(j.case.id, j.attempt) for j in jobs]
    assert any(v[2] for v in hosted)
    assert hosted == verdicts(run_suite(jobs, agent, RunOptions(mode="serial", timeout=60)))


def test_a_host_gets_each_case_as_written_not_compiled(tmp_path: Path) -> None:
    import pickle

    (tmp_path / "c.yaml").write_text(
        textwrap.dedent("""\
            id: c
            input: hi
            context: {customer: C1}
            checks:
              - {type: regex, pattern: "h.", name: greeting}
              - {type: tool_schemas, schemas: {t: {type: object}}}
            """)
    )
    [case] = load_suite(tmp_path / "c.yaml").cases
    with pytest.raises(Exception):  # noqa: B017 - a compiled schema is code, which never crosses
        pickle.dumps(case)
    sent = pickle.loads(pickle.dumps(for_agent(case)))
    assert (sent.id, sent.input, dict(sent.context), sent.file) == ("c", "hi", {"customer": "C1"}, case.file)
    assert [(c.type, c.label, dict(c.params)) for c in sent.checks] == [
        ("regex", "greeting", {"pattern": "h."}),
        ("tool_schemas", "tool_schemas", {"schemas": {"t": {"type": "object"}}}),
    ]


SCRIPT = """\
import os
from kit.case import load_suite
from kit.runner import Job, RunOptions, run_suite
from kit.runner.agents import load_agent

with open("ran.txt", "a") as f:  # every interpreter that runs this file says so
    f.write(f"{os.getpid()}\\n")
jobs = [Job(c, a) for c in load_suite("cases.yaml").cases if c.id == "where" for a in range(c.runs)]
outs = run_suite(jobs, load_agent("spawn_agents:where"), RunOptions(mode="process", workers=2, concurrency=2))
print(sum(o.case_run.passed for o in outs), "passed")
"""


def test_a_script_without_a_main_guard_runs_and_no_host_runs_it_again(project: Path) -> None:
    """multiprocessing's spawn would run the script again in each host (and fail without the guard)."""
    (project / "script.py").write_text(SCRIPT)
    done = subprocess.run([sys.executable, "script.py"], cwd=project, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "4 passed", done.stderr[-3000:]
    assert len((project / "ran.txt").read_text().split()) == 1
