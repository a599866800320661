"""`kit check` and `kit import` read a large file a trace at a time (JSON Lines, or a JSON list) and give what
reading it whole gives; lines end at "\\n" only; a file without traces is bad input. (The memory figures
are measured by bench/import_stream.py.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import kit.trace
from kit.cli import main

CASES = """
- id: c
  input: hi
  checks:
    - {type: called, tool: lookup_order}
    - {type: contains, text: done}
"""
ODD = "line\u2028separator, next\u0085line, para\u2029graph"


def _trace(i: int) -> dict[str, Any]:
    spans = [{"kind": "tool", "name": "lookup_order", "input": {"n": i, "note": ODD}, "output": ODD}] * (i % 2)
    return {"case_id": "c", "attempt": i, "final_output": f"done {ODD}" if i % 3 else "no", "spans": spans}


def _kit(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "c.yaml").write_text(CASES)
    traces = [_trace(i) for i in range(7)]
    # ensure_ascii=False: U+2028 and U+0085 stand raw in the lines, as many writers leave them
    (tmp_path / "t.jsonl").write_text("\n".join(json.dumps(t, ensure_ascii=False) for t in traces) + "\n")
    (tmp_path / "t.json").write_text(json.dumps(traces, ensure_ascii=False, indent=1))
    return tmp_path


@pytest.mark.parametrize("name", ["t.jsonl", "t.json"])
@pytest.mark.parametrize("stream", [False, True])
def test_check_reads_lines_with_unicode_line_separators_whole_or_streamed(files, capsys, monkeypatch, name, stream):
    if stream:
        monkeypatch.setattr(kit.trace, "STREAM_BYTES", 0)
    code, out, err = _kit(capsys, "check", str(files / name), "--cases", str(files / "c.yaml"), "--json")
    assert err == "" and code == 1
    results = json.loads(out)["results"]
    assert [r["attempt"] for r in results] == list(range(7))
    assert [r["passed"] for r in results] == [i % 2 == 1 and i % 3 != 0 for i in range(7)]
    monkeypatch.setattr(kit.trace, "STREAM_BYTES", 1 << 30)
    assert _kit(capsys, "check", str(files / name), "--cases", str(files / "c.yaml"), "--json")[1] == out


def test_streamed_bad_lines_are_errors_and_the_good_ones_are_still_judged(files, capsys, monkeypatch):
    monkeypatch.setattr(kit.trace, "STREAM_BYTES", 0)
    lines = (files / "t.jsonl").read_text().split("\n")
    lines[2] = '{"case_id": "c", "spans": [{"kind": "robot"}]}'
    lines[4] = '{"case_id": "c", "attempt": '
    (files / "bad.jsonl").write_text("\n".join(lines))
    code, out, err = _kit(capsys, "check", str(files / "bad.jsonl"), "--cases", str(files / "c.yaml"), "--json")
    assert code == 2 and len(json.loads(out)["results"]) == 5
    assert f"{files / 'bad.jsonl'}:3" in err and "kind must be llm, tool or message" in err
    assert "malformed JSON on line 5" in err


def test_a_streamed_list_cut_short_is_an_error_after_its_good_items(files, capsys, monkeypatch):
    monkeypatch.setattr(kit.trace, "STREAM_BYTES", 0)
    text = (files / "t.json").read_text()
    (files / "cut.json").write_text(text[: len(text) * 2 // 3])
    code, out, err = _kit(capsys, "check", str(files / "cut.json"), "--cases", str(files / "c.yaml"), "--json")
    assert code == 2 and "malformed JSON in item" in err and 0 < len(json.loads(out)["results"]) < 7


@pytest.mark.parametrize("content", ["[]", "[]\n", ""])
def test_check_on_a_file_without_traces_is_exit_2(tmp_path, capsys, content):
    (tmp_path / "c.yaml").write_text(CASES)
    (tmp_path / "none.json").write_text(content)
    code, _, err = _kit(capsys, "check", str(tmp_path / "none.json"), "--cases", str(tmp_path / "c.yaml"))
    assert code == 2
    if content.strip():
        assert f"no traces in {tmp_path / 'none.json'}: nothing was checked" in err


def test_import_of_message_lines_with_unicode_line_separators(tmp_path, capsys):
    msgs = [{"role": "user", "content": f"hi {ODD}"}, {"role": "assistant", "content": f"done {ODD}"}]
    (tmp_path / "m.jsonl").write_text("\n".join(json.dumps(m, ensure_ascii=False) for m in msgs) + "\n")
    code, out, err = _kit(capsys, "import", str(tmp_path / "m.jsonl"), "--case-id", "c")
    assert code == 0, err
    assert json.loads(out)["final_output"] == f"done {ODD}"


@pytest.mark.parametrize("n", [1, 5])
def test_import_streamed_writes_what_reading_whole_writes(tmp_path, capsys, monkeypatch, n):
    convs = [
        {
            "case_id": "c",
            "messages": [{"role": "user", "content": f"q{i} {ODD}"}, {"role": "assistant", "content": "a"}],
        }
        for i in range(n)
    ]
    (tmp_path / "convs.jsonl").write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in convs) + "\n")
    code, whole, err = _kit(capsys, "import", str(tmp_path / "convs.jsonl"))
    assert code == 0, err
    monkeypatch.setattr(kit.trace, "STREAM_BYTES", 0)
    code, streamed, err = _kit(capsys, "import", str(tmp_path / "convs.jsonl"))
    assert code == 0 and streamed == whole
    got = json.loads(streamed)
    got = got if isinstance(got, list) else [got]
    assert [t["attempt"] for t in got] == list(range(n))
    assert [t["spans"][0]["content"] for t in got] == [f"q{i} {ODD}" for i in range(n)]


def test_import_streamed_bad_run_leaves_nothing_written(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(kit.trace, "STREAM_BYTES", 0)
    good = {"case_id": "c", "messages": [{"role": "user", "content": "q"}]}
    bad = {"case_id": "c", "messages": [{"role": "robot", "content": "q"}]}
    (tmp_path / "convs.jsonl").write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    out = tmp_path / "out" / "t.json"
    code, _, err = _kit(capsys, "import", str(tmp_path / "convs.jsonl"), "-o", str(out))
    assert code == 2 and "unknown role 'robot'" in err and f"{tmp_path / 'convs.jsonl'}:2" in err
    assert not out.exists() and list(out.parent.iterdir()) == []
