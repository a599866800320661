"""`kit case from-trace`: real production traces of the refund desk (tests/fixtures/from_trace: an OpenInference
export and an OpenAI Agents SDK run, recorded by record.py with the real packages, the model a double) become
cases in a user's repository; judged with the oracle, the case fails where the trace failed and passes on the
fixed agent's trace."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _desk_repo import desk_repo, invoked

from kit.agent.cassette import Cassette, ReplayMiss
from kit.case import load_suite
from kit.cli import main as kit
from kit.commands import lint as kit_lint
from kit.commands.check import judge
from kit.importers import import_file
from kit.mcp.cassette import CassetteMiss, McpCassette
from kit.settings import load_settings
from kit.trace import parse_trace

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "from_trace"
OI_BUG = FIXTURES / "openinference-refund-bug.json"
OI_FIXED = FIXTURES / "openinference-refund.json"
AGENTS_BUG = FIXTURES / "agents-refund-bug.json"
AGENTS_FIXED = FIXTURES / "agents-refund.json"
LIBRARY = ROOT / "tests" / "data" / "import" / "library" / "openinference_buggy.json"
LIBRARY_GUARDED = LIBRARY.with_name("openinference_guarded.json")
MCP_EXPORT = ROOT / "tests" / "data" / "mcp" / "agents_openinference.json"
EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")


def lint(root, **options):
    """`kit lint` on `root` with the settings of the working directory, as its command line reads them."""
    return kit_lint.lint(root, settings=load_settings(), **options)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's repository: [tool.kit] cases in golden/cases, the desk's tools.json and invariants."""
    return desk_repo(tmp_path, monkeypatch)


def _written(repo: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[str, Path]:
    code = kit(["case", "from-trace", *args])
    out, err = capsys.readouterr()
    assert code == 0, err
    case_id = re.search(r"kit case: (\S+): from", out).group(1)
    return case_id, repo / "golden" / "cases" / f"{case_id}.yaml"


def _case(path: Path, case_id: str):
    suite = load_suite(path.parent, path.parent.parent / "invariants.yaml")
    assert not suite.errors, suite.errors
    return suite.by_id()[case_id]


def _trace(path: Path, case_id: str):
    data = import_file(path)[0]
    data["case_id"] = case_id
    return parse_trace(data)


def _failures(run) -> list[str]:
    return [r.name for r in run.results if r.outcome != "pass"]


@pytest.mark.parametrize("bug,fixed", [(OI_BUG, OI_FIXED), (AGENTS_BUG, AGENTS_FIXED)], ids=["openinference", "agents"])
def test_a_failure_becomes_a_case_that_fails_on_it_and_passes_fixed(repo, capsys, bug, fixed):
    case_id, path = _written(repo, capsys, str(bug))
    assert not lint(path).problems
    # Neither holds the request the SDK sent (its tools): no recording could match, the model runs live.
    assert "# Model: the model runs live: the trace holds" in path.read_text()
    assert not (repo / "golden" / "recordings").exists()
    case = _case(path, case_id)
    assert case.invariants == ("refund_safety",)
    # From a failing trace nothing it did is expected: only the invariant's checks and checks that freeze nothing.
    assert {s.type for s in case.checks if s.invariant is None} == {"no_repeat", "budget"}
    assert _failures(judge(_trace(bug, case_id), case)) == ["guarded:issue_refund"]
    assert _failures(judge(_trace(fixed, case_id), case)) == []
    written = repo / "golden" / "cases" / "traces" / f"{case_id}.json"
    assert kit(["check", "--cases", "golden/cases", str(written)]) == 1
    assert "fail: guarded:issue_refund" in capsys.readouterr().out


def test_a_passing_trace_proposes_what_happened_for_review(repo, capsys):
    case_id, path = _written(repo, capsys, str(AGENTS_FIXED))
    assert case_id == "refund-desk-2"  # the trace's case id is the suite's hand-written case's
    assert not lint(path).problems
    checks = [dict(s.raw) for s in _case(path, case_id).checks]
    assert {"type": "args", "tool": "issue_refund", "expected": {"order_id": "ORD-000123", "amount": 19.99}} in checks
    assert {"type": "guarded", "tool": "issue_refund", "requires": "lookup_order"} in checks
    assert {"type": "not_called", "tool": "handoff_to_human"} in checks
    assert {"type": "no_repeat"} in checks
    budgets = [c for c in checks if c["type"] == "budget"]
    assert budgets == [
        {"type": "budget", "steps": 6, "tool_calls": 5},
        {"name": "budget:tokens", "type": "budget", "tokens": 1296},
        {"name": "budget:latency", "type": "budget", "latency_ms": 5249},
    ]
    assert not {"contains", "exact", "regex", "trajectory", "order"} & {c["type"] for c in checks}
    lines = path.read_text().splitlines()
    for n, line in enumerate(lines):
        if line.strip().startswith("- {type:"):
            assert lines[n - 1].strip().startswith("# PROPOSED from trace refund-desk, review:"), line
    assert "instead of the requirement" in path.read_text()
    tape = Cassette.load(path.parent / "cassettes" / f"{case_id}.json")
    assert tape.tool_response("lookup_order", {"order_id": "ORD-000123"})["output"]["total"] == 19.99
    with pytest.raises(ReplayMiss, match="no recorded response for tool issue_refund"):
        tape.tool_response("issue_refund", {"order_id": "ORD-000123", "amount": 5})
    assert _failures(judge(_trace(AGENTS_FIXED, case_id), _case(path, case_id))) == []
    # The same trace again: a new id, never the one just written.
    assert _written(repo, capsys, str(AGENTS_FIXED))[0] == "refund-desk-3"


def test_a_conversation_keeps_its_turns(library_repo, capsys):
    case_id, path = _written(library_repo, capsys, str(LIBRARY_GUARDED))
    assert not lint(path).problems
    case = _case(path, case_id)
    assert case.turns == ("I am member M7. I'd like to return Dune.", "Yes, please return it.")
    assert _failures(judge(_trace(LIBRARY_GUARDED, case_id), case)) == []
    # The call the guard held back in turn 0 never ran: the write is proposed as it ran, once, after the read.
    checks = [dict(s.raw) for s in case.checks]
    assert {"type": "args", "tool": "return_book", "expected": {"loan_id": "L42"}} in checks
    assert {"type": "guarded", "tool": "return_book", "requires": "list_loans"} in checks


def test_an_mcp_conversation_gets_an_mcp_cassette(repo, capsys):
    case_id, path = _written(repo, capsys, str(MCP_EXPORT))
    tape = McpCassette.load(path.parent / "cassettes" / f"{case_id}.mcp" / "shop.json")
    assert tape.tool_names == ["lookup_order", "issue_refund"]
    answer = tape.reply("lookup_order", {"order_id": "ORD-7"})["result"]
    assert answer["isError"] is False and "ORD-7" in answer["content"][0]["text"]
    with pytest.raises(CassetteMiss, match="no recorded response for tool lookup_order"):
        tape.reply("lookup_order", {"order_id": "ORD-8"})  # a new call is a loud miss
    assert not lint(path).problems
    assert not (path.parent / "cassettes" / f"{case_id}.json").exists()  # no function tools: no tool cassette


def test_masking_leaves_no_address_and_the_case_still_reproduces(repo, capsys):
    emails = set(EMAIL.findall(AGENTS_FIXED.read_text())) | set(EMAIL.findall(OI_BUG.read_text()))
    assert emails
    passing, passing_path = _written(repo, capsys, str(AGENTS_FIXED), "--mask", "--mask-pattern", r"ORD-\d{6}")
    failing, failing_path = _written(repo, capsys, str(OI_BUG), "--mask")
    originals = {"desk.yaml", "invariants.yaml", "tools.json"}
    files = [p for p in (repo / "golden").rglob("*") if p.is_file() and p.name not in originals]
    assert sorted(p.relative_to(repo / "golden").as_posix() for p in files) == sorted(
        [
            f"cases/cassettes/{failing}.json",
            f"cases/cassettes/{passing}.json",
            f"cases/traces/{failing}.json",
            f"cases/traces/{passing}.json",
            f"cases/{failing}.yaml",
            f"cases/{passing}.yaml",
        ]
    )
    for f in files:
        text = f.read_text()
        assert not [e for e in emails if e.lower() in text.lower()], f
        assert "415 555 2671" not in text
    # One value, one token, across the case, its checks, the tool cassette and the trace.
    checks = [dict(s.raw) for s in _case(passing_path, passing).checks]
    assert {
        "type": "args",
        "tool": "send_email",
        "expected": {"to": "user-1@example.invalid", "body": "Your refund of 19.99 is on its way."},
    } in checks
    assert {"type": "args", "tool": "issue_refund", "expected": {"order_id": "masked-1", "amount": 19.99}} in checks
    tape = json.loads((passing_path.parent / "cassettes" / f"{passing}.json").read_text())
    assert tape["tools"][0]["output"]["email"] == "user-1@example.invalid"
    assert tape["tools"][0]["args"] == {"order_id": "masked-1"}
    assert "user-1@example.invalid" in _case(passing_path, passing).input
    # Reproduces: the masked case on the masked traces it wrote, as the unmasked case on the originals.
    for case_id, path, want in ((passing, passing_path, []), (failing, failing_path, ["guarded:issue_refund"])):
        written = parse_trace(json.loads((path.parent / "traces" / f"{case_id}.json").read_text()))
        assert _failures(judge(written, _case(path, case_id))) == want
        assert not lint(path).problems


def _refused(capsys, *args: str) -> str:
    code = kit(["case", "from-trace", *args])
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in err
    return err


def test_hostile_input_is_refused_by_name(repo, capsys, tmp_path_factory):
    assert "nope.json: no such trace file" in _refused(capsys, "nope.json")
    (repo / "bad.json").write_bytes(b"\xff\xfe{not json")
    assert "bad.json" in _refused(capsys, "bad.json")
    (repo / "odd.json").write_text('{"hello": 1}')
    assert "odd.json: unknown trace format" in _refused(capsys, "odd.json")
    assert "--id 'refund-desk': the suite already has" in _refused(capsys, str(AGENTS_BUG), "--id", "refund-desk")
    outside = tmp_path_factory.mktemp("elsewhere")
    assert "outside the repository" in _refused(capsys, str(AGENTS_BUG), "--out", str(outside))
    (repo / "golden" / "linked").symlink_to(outside)
    assert "is a symbolic link" in _refused(capsys, str(AGENTS_BUG), "--out", "golden/linked/cases")
    assert "--mask-pattern '(': not a regular expression" in _refused(capsys, str(AGENTS_BUG), "--mask-pattern", "(")
    assert "no such store" in _refused(capsys, "--run", "latest")
    (repo / "mute.json").write_text('{"case_id": "mute", "spans": [{"kind": "llm"}]}')
    assert "case 'mute': the trace holds no user message" in _refused(capsys, "mute.json")
    assert "--attempt -1: an attempt is a whole number" in _refused(capsys, str(AGENTS_BUG), "--attempt", "-1")
    two = ROOT / "tests" / "data" / "import" / "otel_genai_two_runs.json"
    assert "holds 2 traces" in _refused(capsys, str(two))
    assert not list((repo / "golden" / "cases").glob("*/*.json"))  # nothing was written
    assert not list(outside.iterdir())


def test_the_latest_failing_run_in_the_store(repo, capsys):
    from kit.evaluate import evaluate
    from kit.store import open_store

    store = open_store(repo / ".kit" / "evals.duckdb")
    case = load_suite(repo / "golden" / "cases", repo / "golden" / "invariants.yaml").by_id()["refund-desk"]
    run_id = store.start_run("kit", agent="desk:run", model="desk-model-2026-01-01")
    for attempt, path in enumerate((AGENTS_FIXED, AGENTS_BUG)):
        data = {**json.loads(path.read_text()), "attempt": attempt}
        trace = parse_trace(data)
        store.record(run_id, evaluate(trace, case), data)
    store.finish_run(run_id)
    case_id, path = _written(repo, capsys, "--run", "latest")
    assert "case refund-desk, attempt 1 (fail)" in path.read_text()
    assert _failures(judge(_trace(AGENTS_BUG, case_id), _case(path, case_id))) == ["guarded:issue_refund"]
    # A named attempt that passed: what it did is proposed, and the stored case's context goes with it.
    case_id, path = _written(repo, capsys, "--run", run_id[:8], "--case", "refund-desk", "--attempt", "0")
    assert "case refund-desk, attempt 0 (pass)" in path.read_text()
    assert "args" in {s.type for s in _case(path, case_id).checks}
    assert _case(path, case_id).context == {"channel": "chat"}
    assert "has no attempt of this case" in _refused(capsys, "--run", "latest", "--case", "nope")
    assert "no run matches 'zzz'" in _refused(capsys, "--run", "zzz")


LIBRARY_DESK = ROOT / "scripts" / "otel_exports"


@pytest.fixture
def library_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The library desk's repository: its tools.json and the `confirmed` invariant its buggy run broke."""
    desk_repo(tmp_path, monkeypatch, name="library", suite="library")
    monkeypatch.syspath_prepend(str(LIBRARY_DESK))
    return tmp_path


def _replayed(agent: str, folder: Path, case):
    """The kit's runner on the agent (`kit.runner.invoke`) with the model's answers from the recordings alone:
    no model server (the agent's base URL is a closed port)."""
    return invoked(agent, "replay", folder, case, timeout=60)


def test_offline_the_case_fails_on_the_faulty_agent_naming_the_invariant(library_repo, capsys, monkeypatch):
    case_id, path = _written(library_repo, capsys, str(LIBRARY), "--mask")
    assert "4 model call(s) recorded (attempt 0) as the requests were sent" in path.read_text()
    case = _case(path, case_id)
    assert case.invariants == ("confirmed",)
    folder = library_repo / "golden" / "recordings"
    monkeypatch.setenv("LIBRARY_MODEL_URL", "http://127.0.0.1:9/v1")  # nothing listens: every answer is replayed
    faulty = _replayed("library_agent:buggy", folder, case).case_run
    assert faulty.error is None
    assert [r.name for r in faulty.results if r.outcome == "fail"] == ["not_called:return_book@turn0"]
    # The agent returns messages, which hold no tokens: the tokens budget says it cannot judge (never a pass).
    assert [r.name for r in faulty.results if r.error] == ["budget:tokens"]
    # The fixed agent asks first: its second request is not the faulty run's, and the replay says so.
    fixed = _replayed("library_agent:guarded", folder, case).case_run
    assert fixed.error.startswith(f"recording miss: case {case_id!r} attempt 0: POST /v1/chat/completions: messages[")
    # Judged on its own production trace, the fixed agent passes the case.
    assert _failures(judge(_trace(LIBRARY_GUARDED, case_id), case)) == []


def test_an_end_state_is_proposed_as_the_rows_it_left(repo, capsys):
    data = json.loads(AGENTS_FIXED.read_text())
    data["end_state"] = {"refunds": [{"order_id": "ORD-000123", "amount": 19.99}], "emails": []}
    (repo / "prod.json").write_text(json.dumps(data))
    case_id, path = _written(repo, capsys, "prod.json")
    checks = [dict(s.raw) for s in _case(path, case_id).checks if s.type == "end_state"]
    assert checks == [
        {"type": "end_state", "query": 'SELECT * FROM "emails"', "empty": True},
        {
            "type": "end_state",
            "query": 'SELECT "order_id", "amount" FROM "refunds"',
            "expected": [["ORD-000123", 19.99]],
        },
    ]
    assert _failures(judge(parse_trace({**data, "case_id": case_id}), _case(path, case_id))) == []


def test_one_value_one_token():
    from kit.casegen.redact import KINDS, Masker

    m = Masker(KINDS, [re.compile(r"C\d{3}")])
    got = m.value(
        {
            "to": "Jane.Doe@Example.com",
            "cc": ["jane.doe@example.com", "bob@example.org"],
            "note": "call +1 415 555 2671 (or +14155552671), card 4111 1111 1111 1111, customer C042",
            "card": 4111111111111111,
            "amount": 19.99,
        }
    )
    assert got == {
        "to": "user-1@example.invalid",
        "cc": ["user-1@example.invalid", "user-2@example.invalid"],
        "note": "call +1-555-0101 (or +1-555-0101), card 0000-0000-0000-0001, customer masked-1",
        "card": "0000-0000-0000-0001",
        "amount": 19.99,
    }
    assert m.masked == {"email": 2, "phone": 1, "card": 1, "pattern": 1}
