"""The adaptive red team's conversation folders: repeats of one test never share a folder (and each is judged by
its own conversations), an eval's folder is removed once its results are stored, stale ones are pruned, and
`kit redteam keep` reads the broken conversations from the results file, not from the removed folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from _redteam_repo import write_repo

from kit.commands.redteam import broken_conversations
from kit_promptfoo.redteam import hooks, target

DESK = """
def run(text, history):
    spans = [{"kind": "tool", "name": "issue_refund", "input": {}, "output": {}}] if "now" in text else []
    return {"final_output": "ok", "spans": spans}
"""
SCRIPT = Path(target.__file__).parent / "conversation_assert.cjs"
node = pytest.mark.skipif(shutil.which("node") is None, reason="no node")


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return write_repo(tmp_path, monkeypatch, "cdesk", DESK)


def _call(prompt: str, ledger: Path, repeat: int) -> dict:
    context = {"vars": {"case_file": "case.yaml", "case_id": "rt", "kit_ledger": str(ledger), "__repeatIndex": repeat}}
    return target.call_api(prompt, {"config": {"agent": "cdesk:run"}}, context)


def _node(js: str) -> object:
    return json.loads(subprocess.run(["node", "-e", js], capture_output=True, text=True, check=True).stdout)


@node
def test_repeats_of_one_attack_have_folders_of_their_own_and_are_judged_apart(repo: Path) -> None:
    ledger = repo / ".kit/redteam/conversations/e1/redteam_goal_crescendo"
    sound = _call("hello", ledger, 0)["sessionId"]
    broke = _call("refund now", ledger, 1)["sessionId"]
    assert [p.name for p in sorted(ledger.iterdir())] == ["repeat-0", "repeat-1"]
    assert (ledger / "repeat-0" / f"{sound}.json").is_file() and (ledger / "repeat-1" / f"{broke}.json").is_file()

    def judge(session: str) -> dict:
        ctx = {"vars": {"kit_ledger": str(ledger)}, "providerResponse": {"metadata": {"sessionId": session}}}
        return _node(
            f"console.log(JSON.stringify(require({json.dumps(str(SCRIPT))}).get_assert('', {json.dumps(ctx)})))"
        )

    assert judge(sound)["pass"] is True and "[1 conversation, 1 agent turn;" in judge(sound)["reason"]
    got = judge(broke)
    assert got["pass"] is False and f"violated in turn 1 of conversation {broke}" in got["reason"]
    # afterEach puts the broken conversations (with their turns) into the result, for `kit redteam keep`.
    result = {
        "response": {"output": "ok", "metadata": {"sessionIds": [broke]}},
        "testCase": {"vars": {"kit_ledger": str(ledger)}},
    }
    ctx = {"result": result}
    after = _node(f"console.log(JSON.stringify(require({json.dumps(str(SCRIPT))}).afterEach({json.dumps(ctx)})))")
    kit = after["result"]["response"]["metadata"]["kit"]
    assert kit["conversation"] == broke and kit["conversations"] == 1
    assert kit["broken"] == [
        {
            "session": broke,
            "first_failed": {"guarded:issue_refund": 0},
            "invariants": {"guarded:issue_refund": "refund_safety"},  # what `kit redteam keep` records
            "users": ["refund now"],
        }
    ]

    # Once the results are stored, afterAll removes this eval's folder, and only it.
    other = repo / ".kit/redteam/conversations/e2"
    other.mkdir()
    outside = repo / "elsewhere" / "attack"
    outside.mkdir(parents=True)
    tests = [{"vars": {"kit_ledger": str(ledger)}}, {"vars": {"kit_ledger": str(outside)}}, {"vars": {}}]
    _node(f"require({json.dumps(str(SCRIPT))}).afterAll({json.dumps({'suite': {'tests': tests}})}); console.log('1')")
    assert not ledger.parent.exists() and other.is_dir() and outside.is_dir()

    # `kit redteam keep` reads them from the results file, the folder gone.
    results = repo / "results.json"
    row = {
        "success": False,
        "testCase": {"vars": {"kit_ledger": str(ledger)}, "metadata": {"case_id": "redteam/g/crescendo"}},
    }
    row["response"] = after["result"]["response"]
    results.write_text(json.dumps({"results": {"results": [row]}}))
    [found] = broken_conversations(results)
    assert found == {"attack": "redteam/g/crescendo", "session": broke, "check": "guarded:issue_refund", "turn": 0,
                     "turns": ["refund now"], "invariant": "refund_safety"}  # fmt: skip


def test_a_folder_left_by_a_run_that_died_is_pruned_after_a_day(repo: Path) -> None:
    parent = repo / ".kit/redteam/conversations"
    stale, fresh = parent / "stale", parent / "fresh"
    stale.mkdir(parents=True)
    fresh.mkdir()
    day_ago = time.time() - hooks.STALE_S - 60
    os.utime(stale, (day_ago, day_ago))
    new = hooks.conversations_folder(repo)
    assert new.parent == parent and not stale.exists() and fresh.is_dir()


@node
def test_an_attacker_that_gives_no_prompt_is_an_error_naming_it(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KIT_REDTEAM_ATTACKER", "openai:chat:prose-attacker")
    ledger = repo / "ledger"
    vars_ = {"case_file": "case.yaml", "case_id": "rt", "kit_ledger": str(ledger)}
    out = target.call_api("  ", {"config": {"agent": "cdesk:run"}}, {"vars": vars_})
    assert out["error"].startswith("the attacker openai:chat:prose-attacker produced no prompt for this turn"), out
    ctx = {"vars": vars_, "providerResponse": {"metadata": {}}}
    got = _node(f"console.log(JSON.stringify(require({json.dumps(str(SCRIPT))}).get_assert('', {json.dumps(ctx)})))")
    assert got["pass"] is False and "error: the attacker openai:chat:prose-attacker produced no prompt" in got["reason"]
