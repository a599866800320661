"""An agent whose error comes out of a TaskGroup (the MCP SDK's, anyio's) is named by the errors the group
holds, type and message, each once: never "ExceptionGroup: unhandled errors in a TaskGroup"."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from kit.case import load_suite
from kit.runner import invoke
from kit.runner.agents import load_agent

AGENT = """\
import anthropic
import anyio

URL = {url!r}


async def _ask():
    client = anthropic.AsyncAnthropic(base_url=URL, api_key="k", max_retries=0)
    await client.messages.create(model="m", max_tokens=8, messages=[{{"role": "user", "content": "hi"}}])


def one(text):
    anyio.run(_both, _ask)


def twice(text):  # the same connection error twice, beside another in a nested group
    errors = []
    for _ in range(2):
        try:
            anyio.run(_ask)
        except anthropic.APIConnectionError as e:
            errors.append(e)
    try:
        raise ValueError("no such desk")
    except ValueError as e:
        errors.append(e)
    raise ExceptionGroup("unhandled errors in a TaskGroup", [errors[0], ExceptionGroup("inner", errors[1:])])


async def _both(*tasks):
    async with anyio.create_task_group() as tg:
        for task in tasks:
            tg.start_soon(task)
"""


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    with socket.socket() as s:  # a loopback port nothing listens on: the real SDK's connection error
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    (tmp_path / "group_agent.py").write_text(AGENT.format(url=url))
    (tmp_path / "cases.yaml").write_text(
        'id: order\ninput: "Where is ORD-1?"\nchecks:\n  - {type: contains, text: x}\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _sdk_error() -> str:
    """The SDK's own connection error, type and message, as the runner names an error: the wording is the SDK's,
    and moves between its releases ("Connection error." in earlier ones, the address it tried in later ones)."""
    import anyio
    from group_agent import _ask

    with pytest.raises(Exception) as raised:
        anyio.run(_ask)
    return f"{type(raised.value).__name__}: {raised.value}"


def _error(project: Path, fn: str) -> str:
    case = load_suite(project / "cases.yaml").by_id()["order"]
    run = invoke(load_agent(f"group_agent:{fn}"), case, 0, timeout=10)
    assert run.case_run.outcome == "error"
    return run.case_run.error or ""


def test_a_task_groups_one_error_is_named_as_itself(project):
    error = _error(project, "one")
    assert error.startswith(f"the agent raised {_sdk_error()} (at "), error
    assert "ExceptionGroup" not in error and "TaskGroup" not in error


def test_a_task_groups_errors_are_each_named_once(project):
    error = _error(project, "twice")
    assert error.startswith(f"the agent raised 2 errors: {_sdk_error()} (at "), error
    assert error.count("APIConnectionError") == 1
    assert "ValueError: no such desk (at group_agent.py:24)" in error
    assert "ExceptionGroup" not in error
