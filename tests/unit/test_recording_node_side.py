"""The model calls that leave from Node, as `make evals` wires them (kit.pipeline.stages.node_side): the red team's
grader.cjs, run by Node with the plan document, asks its judge through the kit's recordings endpoint; recorded once,
it replays with the judge stopped, and a changed prompt is its error naming the first difference. A red team typed
by hand under recordings, with no endpoint in its plan, is refused naming `make evals`."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kit.doubles.sampling_model import SamplingModel
from kit.plan import Plan, make_plan
from kit.recording import read
from kit.recording.files import GRADER
from kit.settings import validated
from kit_promptfoo.redteam import hooks
from kit_promptfoo.redteam.config import REDTEAM

JUDGE = "judge-2025-01-01"
KEY = "sk-judge-NEVER-WRITTEN-4"
ASK = """
const Grader = require(process.argv[1]);
const g = new Grader({});
(async () => { const out = []; for (const p of JSON.parse(process.argv[2])) out.push(await g.callApi(p));
  console.log(JSON.stringify(out)); })();
"""


def _plan(tmp_path: Path, mode: str, **redteam: str) -> Plan:
    settings = validated(
        {
            "agent": "desk:run",
            "store": str(tmp_path / "evals.duckdb"),
            "cases": str(tmp_path / "cases.yaml"),
            "judge": {"model": JUDGE, "base_url": "http://127.0.0.2:9/v1", "api_key": KEY},
            "recordings": {"mode": mode, "folder": str(tmp_path / "recordings")},
            "redteam": redteam,
        },
        where="test",
    )
    return make_plan(settings, defer_agent=True)


def _served(plan: Plan, base_url: str | None = None) -> Plan:
    from kit.pipeline.stages import node_side

    if base_url is not None:  # the judge double's port, known once it listens
        plan = plan.derive(judge={"model": JUDGE, "base_url": base_url, "api_key": KEY})
    return node_side(plan)


def _grade(plan: Plan, prompts: list[str]) -> list[dict]:
    env = {"PATH": "/usr/bin:/bin", **plan.env()}
    done = subprocess.run(
        ["node", "-e", ASK, str(REDTEAM / "grader.cjs"), json.dumps(prompts)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture(autouse=True)
def _stop_endpoints() -> Iterator[None]:
    from kit.pipeline.stages import _SERVING  # make evals' endpoints serve until its process ends; a test's, not

    yield
    for endpoint in _SERVING:
        endpoint.stop()  # type: ignore[attr-defined]
    _SERVING.clear()


@pytest.mark.skipif(shutil.which("node") is None, reason="grader.cjs runs in Node")
def test_grader_cjs_records_through_the_endpoint_and_replays_with_the_judge_stopped(tmp_path: Path) -> None:
    def prompts(at: str) -> list[str]:  # Promptfoo stamps each grading with its time: replayed all the same
        return [f"grade: the agent {did}\n\nCurrent timestamp: {at}" for did in ("refused", "complied", "refused")]

    with SamplingModel(['{"pass": true, "score": 1}', '{"pass": false, "score": 0}'], seed=3) as judge:
        recording = _served(_plan(tmp_path, "record"), judge.base_url + "/v1")
        assert set(recording.node_endpoints) == {"grader"}
        recorded = [r["output"] for r in _grade(recording, prompts("2026-01-01T10:00:00.000Z"))]
        assert len(judge.requests) == 3  # every call reached the judge, through the endpoint
    saved = read(tmp_path / "recordings", GRADER)
    assert saved is not None and saved.model == JUDGE and len(saved.attempts["0"]) == 3
    assert all(KEY not in p.read_text() for p in (tmp_path / "recordings").rglob("*.json"))

    replaying = _served(_plan(tmp_path, "replay"))  # the judge is stopped: nothing listens at its URL
    assert [r["output"] for r in _grade(replaying, prompts("2026-01-02T11:30:00.123Z"))] == recorded
    (missed,) = _grade(replaying, ["grade: the agent complied twice"])
    assert "output" not in missed
    assert "HTTP 400" in missed["error"] and "messages[0].content changed" in missed["error"]


def test_a_red_team_typed_by_hand_is_refused_under_recordings(tmp_path: Path) -> None:
    attacker = {"attacker": "openai:chat:attacker-1", "attacker_base_url": "http://127.0.0.2:9/v1"}
    graded = [{"assert": [{"type": "promptfoo:redteam:pii"}]}]
    refused = hooks.unserved(_plan(tmp_path, "replay", **attacker), graded)
    assert refused is not None and "make evals" in refused
    assert "the attacker (openai:chat:attacker-1)" in refused and "grader.cjs" in refused
    assert hooks.unserved(_plan(tmp_path, "live", **attacker), graded) is None
    served = _served(_plan(tmp_path, "replay", **attacker))  # make evals' plan: both served by the kit
    assert set(served.node_endpoints) == {"attacker", "grader"}
    assert hooks.unserved(served, graded) is None
