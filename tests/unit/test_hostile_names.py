"""Names and settings that lie: a case id that is a path or holds control characters is refused at load (exit
2, file and case named, nothing printed raw), no file named after data leaves its folder, and absurd
settings (an endless timeout, an empty store path, NaN, inf, a negative number) are exit 2 naming the key."""

from __future__ import annotations

import os

import pytest

from kit.case import load_suite
from kit.cli import main as kit

GOOD = "- id: fine\n  input: where is my order ORD-1001\n  checks: [{type: finished}]\n"
BAD_IDS = {
    "parent": '"../../escaped"',
    "absolute": '"/tmp/kit-escaped"',
    "esc": '"red\\e[31mALERT"',
    "nul": '"a\\0b"',
    "backslash": '"..\\\\x"',
    "dot": '"a/./b"',
    "newline": '"a\\nb"',
    "bidi": '"abc\\u202Edcb"',
}


def _case(yaml_id: str) -> str:
    return f"- id: {yaml_id}\n  input: where is my order ORD-1001\n  checks: [{{type: finished}}]\n"


@pytest.mark.parametrize("kind", sorted(BAD_IDS))
def test_a_bad_case_id_is_exit_2_naming_file_and_case_and_printed_escaped(tmp_path, capsys, kind):
    f = tmp_path / "cases.yaml"
    f.write_text(_case(BAD_IDS[kind]) + GOOD)
    assert kit(["lint", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and "case '" in err and "a case id" in err and "Traceback" not in err
    assert not any(ch in err for ch in "\x1b\x00\u202e"), "a control character reached the terminal raw"
    suite = load_suite(f)
    assert [c.id for c in suite.cases] == ["fine"]  # the good case beside it still loads


def test_a_slash_inside_an_id_stays_allowed(tmp_path):
    f = tmp_path / "cases.yaml"
    f.write_text(_case('"refunds/partial"'))
    suite = load_suite(f)
    assert not suite.errors and suite.cases[0].id == "refunds/partial"


def test_record_never_writes_a_cassette_outside_its_folder(tmp_path, monkeypatch, capsys):
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    (tmp_path / "cases.yaml").write_text(_case('"../../escaped"') + GOOD)
    monkeypatch.chdir(work)
    code = kit(["run", "--cases", str(tmp_path / "cases.yaml"), "--record", "rec", "-q", "--no-store"])
    assert code == 2
    outside = [p for p in tmp_path.rglob("*.json") if ".kit" not in p.parts and "rec" not in p.parts]
    assert outside == []
    assert sorted(p.name for p in (work / "rec").iterdir()) == ["fine.json"]


def test_file_in_refuses_what_leaves_the_folder(tmp_path):
    from kit.names import file_in

    (tmp_path / "out").mkdir()
    os.symlink(tmp_path, tmp_path / "out" / "link")
    assert file_in(tmp_path / "out", "a/b", ".json") == tmp_path / "out" / "a" / "b.json"
    for name in ("../x", "/abs", "link/x", "a\x1b", "", "a//b"):
        with pytest.raises(ValueError, match="cannot name a file"):
            file_in(tmp_path / "out", name, ".json")


# --- absurd settings ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "key", "words"),
    [
        ("agent_timeout = 1e308", "agent_timeout", "less than or equal to 86400"),
        ("agent_timeout = -1", "agent_timeout", "greater than 0"),
        ("agent_timeout = 0", "agent_timeout", "greater than 0"),
        ("agent_timeout = nan", "agent_timeout", "finite number"),
        ("agent_timeout = inf", "agent_timeout", "finite number"),
        ('store = ""', "store", "an empty path is not a file"),
        ('store = "   "', "store", "an empty path is not a file"),
        ('cases = ""', "cases", "an empty path is not a file"),
        ('gates = ""', "gates", "an empty path is not a file"),
        ('store = "a\\u0000b"', "store", "NUL"),
        ('run_id = "../../x"', "run_id", "a run id has an empty, '.' or '..' path part"),
        ('run_id = "/tmp/x"', "run_id", "a run id is an absolute path"),
        ("concurrency = -3", "concurrency", "greater than or equal to 1"),
    ],
)
@pytest.mark.parametrize("command", ["report", "gate", "run"])
def test_an_absurd_project_setting_is_exit_2_naming_the_key(tmp_path, monkeypatch, capsys, line, key, words, command):
    (tmp_path / "pyproject.toml").write_text(f"[tool.kit]\n{line}\n")
    monkeypatch.chdir(tmp_path)
    for var in ("KIT_AGENT_TIMEOUT", "KIT_STORE", "KIT_CASES", "KIT_GATES", "KIT_RUN_ID", "KIT_CONCURRENCY"):
        monkeypatch.delenv(var, raising=False)
    argv = {"report": ["report"], "gate": ["gate"], "run": ["run", "-q", "--no-store"]}[command]
    assert kit(argv) == 2
    err = capsys.readouterr().err
    assert f"setting [tool.kit] {key}: " in err and words in err and "Traceback" not in err, err


@pytest.mark.parametrize(
    ("var", "value", "words"),
    [
        ("KIT_AGENT_TIMEOUT", "1e308", "less than or equal to 86400"),
        ("KIT_AGENT_TIMEOUT", "nan", "finite number"),
        ("KIT_AGENT_TIMEOUT", "-inf", "finite number"),
        ("KIT_RUN_ID", "run\x1b[2J", "control character U+001B"),
        ("KIT_JUDGE_TIMEOUT", "1e308", "less than or equal to 86400"),
        ("KIT_JUDGE_TIMEOUT", "inf", "finite number"),
        ("KIT_USER_TIMEOUT", "nan", "finite number"),
        ("KIT_JUDGE_TEMPERATURE", "inf", "finite number"),
        ("KIT_JUDGE_TEMPERATURE", "7", "less than or equal to 2"),
    ],
)
def test_an_absurd_variable_is_exit_2_naming_it(tmp_path, monkeypatch, capsys, var, value, words):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(var, value)
    assert kit(["report"]) == 2
    err = capsys.readouterr().err
    assert f"setting {var} (" in err and words in err and "\x1b" not in err


def test_a_sane_timeout_still_loads(tmp_path, monkeypatch):
    from kit.settings import load_settings

    (tmp_path / "pyproject.toml").write_text("[tool.kit]\nagent_timeout = 86400\n")
    assert load_settings(root=tmp_path, env={}).agent_timeout == 86400


# --- names from other tools' files are stored and shown escaped ------------------------------------------


def test_junit_xml_stays_valid_whatever_an_id_or_a_reason_holds():
    import xml.etree.ElementTree as ET

    from kit.report import junit

    bad = "id\x1b[31m\x00\x0b\ud800"
    suite = junit.SuiteRows(
        {"run_id": "r1", "source": "promptfoo"},
        [{"case_id": bad, "attempt": 0, "passed": False, "outcome": "fail", "error": None, "latency_ms": 1}],
        [{"case_id": bad, "attempt": 0, "check": "contains", "gate": "hard", "outcome": "fail", "reason": bad}],
    )
    text = junit.render([suite])
    root = ET.fromstring(text.encode("utf-8"))
    case = root.find("testsuite/testcase")
    assert case is not None and case.get("name") == "id\\x1b[31m\\x00\\x0b\\ud800#0"


def test_promptfoo_case_ids_with_control_characters_are_stored_escaped(tmp_path, capsys):
    import copy
    import json

    from test_ingest import PROMPTFOO_FILE

    from kit.store import open_store

    data = copy.deepcopy(PROMPTFOO_FILE)
    for r in data["results"]["results"]:
        r["testCase"]["metadata"]["case_id"] = "x\x1b[2J\u202e" + r["testCase"]["metadata"]["case_id"]
    path = tmp_path / "out.json"
    path.write_text(json.dumps(data))
    assert kit(["ingest", "promptfoo", str(path), "--store", str(tmp_path / "s.duckdb")]) == 0
    assert "\x1b" not in capsys.readouterr().out
    with open_store(tmp_path / "s.duckdb").connect() as con:
        ids = sorted({r[0] for r in con.execute("SELECT case_id FROM case_results").fetchall()})
    assert ids == ["x\\x1b[2J\\u202eloop", "x\\x1b[2J\\u202erefund"]


def test_a_run_id_that_is_a_path_never_names_a_shard_file(tmp_path, monkeypatch, capsys):
    (tmp_path / "c.yaml").write_text(GOOD)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KIT_RUN_ID", raising=False)
    assert kit(["run", "--cases", "c.yaml", "--shard", "1/2", "--run-id", "../../x", "-q"]) == 2
    assert "setting --run-id (run_id): a run id has an empty, '.' or '..' path part" in capsys.readouterr().err
    # `.kit/shards/../../x-1-of-2` is the project folder itself: nothing may land there or above it.
    assert not [p for folder in (tmp_path, tmp_path.parent) for p in folder.glob("x-1-of-2*")]
