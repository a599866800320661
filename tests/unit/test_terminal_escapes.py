"""Nothing from a trace reaches a terminal raw: an escape sequence, a CR or a line break in a model id, a
tool's name or a tool's error is shown as its escape by `kit run`, `kit report`, `kit gate` and
`kit compare`, so no trace can redraw the screen or forge a line such as "gate passed for run ..."."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.cli import main as kit
from kit.names import printable, terminal

AGENT = r"""
def agent(text, case):
    return {
        "case_id": case.id,
        "model": "gpt\x1b[2J\x1b[H-evil",
        "final_output": "done",
        "finish_reason": "finish",
        "spans": [
            {"kind": "tool", "name": "lookup\x1b]0;pwned\x07_order", "input": {},
             "error": "boom\r\ngate passed for run FORGED: pass rate 100.0%\x1b[0m"},
        ],
    }
"""
CASES = """\
id: c1
input: hi
checks:
  - {type: no_tool_errors}
  - {type: allowed_tools, tools: [lookup_order]}
"""
RAW = ("\x1b", "\r", "\x07")


@pytest.fixture
def project(tmp_path, monkeypatch):
    (tmp_path / "evil_agent.py").write_text(AGENT)
    (tmp_path / "cases.yaml").write_text(CASES)
    monkeypatch.chdir(tmp_path)
    for name in ("KIT_RUN_ID", "KIT_STORE", "KIT_CASES", "KIT_GATES"):
        monkeypatch.delenv(name, raising=False)
    yield tmp_path
    sys.modules.pop("evil_agent", None)


def _clean(text: str) -> None:
    assert not any(ch in text for ch in RAW), repr(text)
    assert not any(line.startswith("gate passed for run FORGED") for line in text.splitlines()), text


def test_no_command_sends_a_traces_control_characters_to_the_terminal(project, capsys):
    store = str(project / "evals.duckdb")
    run = ["run", "--cases", "cases.yaml", "--agent", "evil_agent:agent", "--store", store, "--pool", "thread", "-q"]
    assert kit(run) == 1
    assert kit(run) == 1  # a second run: something to compare with
    said = capsys.readouterr()
    _clean(said.out + said.err)
    assert "lookup\\x1b]0;pwned\\x07_order" in said.out  # shown, as its escape
    assert "boom\\r\\ngate passed for run FORGED" in said.out

    assert kit(["report", "--store", store]) == 0
    said = capsys.readouterr()
    _clean(said.out + said.err)
    assert "gpt\\x1b[2J\\x1b[H-evil" in said.out

    assert kit(["gate", "--store", store, "--baseline", "previous"]) == 1
    said = capsys.readouterr()
    _clean(said.out + said.err)
    assert "boom\\r\\ngate passed for run FORGED" in said.err

    assert kit(["compare", "--store", store]) == 0
    said = capsys.readouterr()
    _clean(said.out + said.err)
    assert "model gpt\\x1b[2J\\x1b[H-evil" in said.out


def test_terminal_keeps_the_kits_own_line_breaks_and_escapes_the_rest():
    assert terminal("a\nb") == "a\nb"
    assert terminal("x\x1b[31mred\r") == "x\\x1b[31mred\\r"
    assert terminal("left\u202eright") == "left\\u202eright"
    assert terminal(terminal("\x1b")) == terminal("\x1b")  # idempotent: printing twice is safe


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=60))
def test_no_text_gets_a_control_character_through(text):
    """Whatever a trace holds: `terminal` keeps exactly the kit's line breaks and lets no other control,
    separator or bidi character through; `printable` (a gate line, a reason) is always one line."""
    shown = terminal(text)
    assert shown.count("\n") == text.count("\n")
    bad = {"Cc", "Cs", "Zl", "Zp"}
    assert all(unicodedata.category(ch) not in bad or ch == "\n" for ch in shown), repr(shown)
    assert not any(0x202A <= ord(ch) <= 0x202E or 0x2066 <= ord(ch) <= 0x2069 for ch in shown)
    assert len(printable(text).splitlines() or [""]) == 1
    assert terminal(shown) == shown
