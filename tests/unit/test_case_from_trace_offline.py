"""`kit case from-trace` on a real OpenInference export of the refund desk on the plain `openai` client
(tests/fixtures/from_trace/openinference-openai-refund-bug.json, recorded by record_openai.py), whose LLM spans
hold the requests as sent: the case, its model recordings and its tool cassette are written, and with no model
server (nothing listens at the agent's base URL) the kit's runner replays the faulty agent to the same failure.
The fixed agent (openai_desk.py: it looks the order up itself and tells the model) asks the model something the
faulty run never did: a loud recording miss offline, until its calls are recorded with the model back."""

from __future__ import annotations

import json
import os
import re
import socket
from pathlib import Path

import pytest
from _desk_repo import desk_repo, invoked

from kit.case import load_suite
from kit.cli import main as kit
from kit.commands import lint as kit_lint
from kit.commands.check import judge
from kit.importers import import_file
from kit.settings import load_settings
from kit.trace import parse_trace

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "from_trace"
BUG = FIXTURES / "openinference-openai-refund-bug.json"
FIXED = FIXTURES / "openinference-openai-refund.json"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's repository with the desk's suite; the desk's agents importable; its model a closed port."""
    desk_repo(tmp_path, monkeypatch)
    monkeypatch.syspath_prepend(str(FIXTURES))
    with socket.socket() as s:  # a port just freed: nothing listens there
        s.bind(("127.0.0.2", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("DESK_MODEL_URL", f"http://127.0.0.2:{port}/v1")
    monkeypatch.setenv("DESK_BUG", "1")  # the model refunds at once (refund_desk.script), when it is back
    return tmp_path


def _run(agent: str, mode: str, folder: Path, case):
    """The kit's runner (`kit.runner.invoke`) on the agent, its model calls under recordings `mode`."""
    return invoked(agent, mode, folder, case, timeout=30).case_run


def test_offline_the_case_fails_on_the_faulty_desk_and_the_fixed_one_passes_if_asked_the_same(repo, capsys):
    import refund_desk

    from kit.doubles.openai_server import ScriptedOpenAIServer

    assert kit(["case", "from-trace", str(BUG)]) == 0
    out = capsys.readouterr().out
    case_id = re.search(r"kit case: (\S+): from", out).group(1)
    assert "which broke guarded:issue_refund" in out
    assert "model: 3 model call(s) recorded (attempt 0) as the requests were sent" in out
    cases, folder = repo / "golden" / "cases", repo / "golden" / "recordings"
    path = cases / f"{case_id}.yaml"
    assert not kit_lint.lint(path, settings=load_settings()).problems
    tape = json.loads((cases / "cassettes" / f"{case_id}.json").read_text())
    assert [t["tool"] for t in tape["tools"]] == ["issue_refund", "send_email"]
    assert len(json.loads((folder / f"{case_id}.json").read_text())["attempts"]["0"]) == 3
    # The reviewer drops the tokens budget, as its comment says: these agents return messages, which hold none.
    text = path.read_text()
    tokens = re.search(r"\n *# PROPOSED[^\n]*tokens[^\n]*\n *- \{name: 'budget:tokens'[^\n]*", text)
    path.write_text(text.replace(tokens.group(0), ""))
    assert not kit_lint.lint(path, settings=load_settings()).problems
    case = load_suite(cases, repo / "golden" / "invariants.yaml").by_id()[case_id]
    miss = f"recording miss: case {case_id!r} attempt 0: POST /v1/chat/completions: messages[2] is new"

    # No model server: the faulty desk asks what production asked, gets its answers, and breaks the invariant.
    faulty = _run("openai_desk:faulty", "replay", folder, case)
    assert (faulty.error, faulty.outcome) == (None, "fail")
    assert [r.name for r in faulty.results if r.outcome != "pass"] == ["guarded:issue_refund"]

    # The fixed desk looks the order up and tells the model: its first request holds messages the recording
    # never saw. Offline that is a loud miss naming it (an error, never a pass, no call made).
    fixed = _run("openai_desk:fixed", "replay", folder, case)
    assert fixed.error.startswith(miss + " (nearest: recorded call 1 of 3)")
    assert (fixed.outcome, fixed.results) == ("error", ())

    # The same fix, the model not told: every request is the faulty run's, the replay answers all of them,
    # and the lookup the desk made itself is in its transcript: it passes offline on production's recording.
    quiet = _run("openai_desk:fixed_quietly", "replay", folder, case)
    assert (quiet.error, quiet.outcome) == (None, "pass")
    assert [r.name for r in quiet.results] == [r.name for r in faulty.results]
    # And the fixed desk's own production trace (it told the model) passes the case.
    data = import_file(FIXED)[0]
    assert judge(parse_trace({**data, "case_id": case_id}), case).outcome == "pass"

    closed = os.environ["DESK_MODEL_URL"]
    with ScriptedOpenAIServer(refund_desk.script, host="127.0.0.2") as srv:
        os.environ["DESK_MODEL_URL"] = srv.base_url  # the monkeypatched variable: restored after the test
        # record-missing records attempts that have no recording: attempt 0 has the faulty run's, so it replays
        # (and misses) without asking the model.
        kept = _run("openai_desk:fixed", "record-missing", folder, case)
        assert kept.error.startswith(miss) and srv.requests == []
        # Recorded again with the model back, the fixed desk passes; then it passes offline too.
        again = _run("openai_desk:fixed", "record", folder, case)
        assert (again.error, again.outcome, len(srv.requests)) == (None, "pass", 3)
    os.environ["DESK_MODEL_URL"] = closed
    offline = _run("openai_desk:fixed", "replay", folder, case)
    assert (offline.error, offline.outcome) == (None, "pass")
    assert [r.name for r in offline.results] == [r.name for r in faulty.results]
    # The recording is now the fixed desk's: the faulty one, asking what production asked, misses on it.
    gone = miss.replace("is new", "is gone")  # its first request lacks the lookup the recorded one holds
    assert _run("openai_desk:faulty", "replay", folder, case).error.startswith(gone)
