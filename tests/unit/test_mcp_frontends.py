"""The MCP desk (tests/unit/_mcp_desk.py, the OpenAI Agents SDK's real MCP client) judged in the three front
ends with `server:` scoping: the kit's runner (`invoke`), DeepEval's oracle metrics (`run_agent`) and
Promptfoo's provider. Its shop server is the committed cassette (tests/data/mcp/shop.json) served by
`kit mcp replay` (one process for the module, over streamable HTTP: the runs only read from it), so no real
server runs. The clean suite passes everywhere; checks scoped to a server the run never used fail everywhere
with the same reasons."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from kit.case import load_suite
from kit.doubles.openai_server import ScriptedOpenAIServer
from kit.runner import invoke
from kit.runner.agents import load_agent

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[0] / "data" / "mcp"
KIT = str(Path(sys.executable).with_name("kit"))
CLEAN = DATA / "desk_cases.yaml"
WRONG = DATA / "desk_wrong_server.yaml"
WRONG_FAILS = {
    "called:lookup_order@server:payments": "server payments: lookup_order never called",
    "allowed_servers": "calls outside the allowed servers: lookup_order, issue_refund on shop",
}


@pytest.fixture(scope="module", autouse=True)
def desk() -> Any:
    sys.path.insert(0, str(HERE))
    from _mcp_desk import desk_model
    from _mcp_http import serving

    saved = dict(os.environ)
    replay = [KIT, "mcp", "replay", str(DATA / "shop.json"), "--port", "0"]
    with ScriptedOpenAIServer(desk_model) as srv, serving(replay) as url:
        os.environ["DESK_MODEL_URL"] = srv.base_url
        os.environ.pop("MCP_SHOP_COMMAND", None)
        os.environ["MCP_SHOP_URL"] = url
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(saved)


def _case(path: Path, case_id: str = "refund") -> Any:
    suite = load_suite(path)
    assert not suite.errors
    return next(c for c in suite.cases if c.id == case_id)


def _kit_runner(path: Path) -> dict[str, str]:
    run = invoke(load_agent("_mcp_desk:run"), _case(path), 0, timeout=60).case_run
    assert run.error is None, run.error
    return {r.name: r.reason for r in run.results if not r.passed}


def _deepeval(path: Path) -> dict[str, str]:
    from deepeval_metrics.api import run_agent
    from deepeval_metrics.api import test_case as deepeval_case
    from deepeval_metrics.oracle import oracle_metrics

    case = _case(path)
    log = run_agent(case, agent="_mcp_desk:run", timeout=60)
    assert log.error is None, log.error
    tc = deepeval_case(log)
    failed = {}
    for metric in oracle_metrics(case, log):
        metric.measure(tc)
        if not metric.is_successful():
            failed[metric.name] = metric.reason
    return failed


def _promptfoo(path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    from kit_promptfoo import agent_provider

    monkeypatch.setenv("KIT_CASES", str(path))
    config = {"config": {"agent": "_mcp_desk:run"}}
    r = agent_provider.call_api(
        "Please refund order ORD-7.", config, {"vars": {"case_id": "refund", "case_file": str(path)}}
    )
    assert "error" not in r, r.get("error")
    return {c["check"]: c["reason"] for c in r["metadata"]["kit"]["verdict"]["checks"] if c["outcome"] != "pass"}


@pytest.mark.parametrize(("path", "fails"), [(CLEAN, {}), (WRONG, WRONG_FAILS)], ids=["clean", "wrong-server"])
def test_the_three_front_ends_agree(path: Path, fails: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    assert _kit_runner(path) == fails
    assert _deepeval(path) == fails
    assert _promptfoo(path, monkeypatch) == fails
