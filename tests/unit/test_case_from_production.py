"""`kit case from-trace --production TRACE_ID`: a production trace the receiver judged (in-process, from the
refund desk's real OpenInference export) becomes a case in one command, and the case fails naming the check
the receiver named."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from _desk_repo import desk_repo

from kit.cli import main as kit
from kit.receiver.judging import production_case
from kit.receiver.service import Options, Receiver
from kit.store import open_store

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "from_trace"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return desk_repo(tmp_path, monkeypatch)


def _judged(repo: Path, export: Path) -> str:
    """The export sent to a receiver (in-process, as one OTLP/HTTP JSON body), judged into the repository's
    store; its trace id."""
    store = open_store(repo / ".kit" / "evals.duckdb")
    production = production_case(repo / "golden" / "invariants.yaml")
    receiver = Receiver(production, store, Options(wal=repo / ".kit" / "wal", settle=0.0, flush_s=0.0))
    receiver.start()
    try:
        status, _, body = receiver.accept(export.read_bytes(), "application/json", None)
        assert status == 200, body
        deadline = time.monotonic() + 10
        while receiver.status()["judged"] < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        receiver.stop(timeout=5)
    with store.connect() as con:
        rows = con.execute("SELECT trace_id, passed FROM production_traces").fetchall()
    assert len(rows) == 1
    return rows[0][0]


def test_a_failing_production_trace_becomes_a_case_failing_the_same_check(repo, capsys):
    trace_id = _judged(repo, FIXTURES / "openinference-refund-bug.json")
    with open_store(repo / ".kit" / "evals.duckdb").connect() as con:
        named = con.execute(
            "SELECT \"check\" FROM production_checks WHERE trace_id = ? AND outcome = 'fail'", [trace_id]
        ).fetchall()
    assert [r[0] for r in named] == ["guarded:issue_refund"]
    capsys.readouterr()

    assert kit(["case", "from-trace", "--production", trace_id.upper()]) == 0
    out = capsys.readouterr().out
    assert f"from production trace {trace_id} (fail), which broke guarded:issue_refund" in out
    case_id = re.search(r"kit case: (\S+): from", out).group(1)
    written = repo / "golden" / "cases" / "traces" / f"{case_id}.json"
    assert kit(["check", "--cases", "golden/cases", str(written)]) == 1
    failed = re.findall(r"fail: ([^\s:]+:[^\s:]+)", capsys.readouterr().out)
    assert failed == ["guarded:issue_refund"]


def test_a_production_trace_that_cannot_become_a_case_is_refused_by_name(repo, capsys):
    def refused(*args: str) -> str:
        assert kit(["case", "from-trace", *args]) == 2
        return capsys.readouterr().err

    assert "no such store" in refused("--production", "ab" * 16)
    trace_id = _judged(repo, FIXTURES / "openinference-refund.json")  # the fixed desk: it passes
    assert "it passed, and a passing trace is not kept" in refused("--production", trace_id)
    assert f"no production trace {'cd' * 16!r}" in refused("--production", "cd" * 16)
    assert "not with --production" in refused("--production", trace_id, "--case", "x")
    assert "one of them" in refused("--production", trace_id, "--run", "latest")
