"""`kit redteam keep`: the attacks file keeps its lines and gains one `kept` line per conversation (never twice),
and every bad input is one line naming what is wrong, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit import yamlio
from kit.cli import main
from kit.commands.redteam import broken_conversations, keep

FOUND = {
    "attack": "redteam/goal-refund-safety-x/crescendo",
    "session": "s1",
    "check": "c",
    "turn": 1,
    "turns": ["a", "b"],
}


def test_kept_conversations_are_appended_once_and_the_files_lines_stay(tmp_path: Path) -> None:
    attacks = tmp_path / "attacks.yaml"
    attacks.write_text("# mine\nattacks:\n  - {id: a1, category: foreign-data, text: hi}  # a comment\n")
    assert keep(attacks, [FOUND]) == ["kept-refund-safety-x-1"]
    text = attacks.read_text()
    assert text.startswith("# mine\nattacks:\n  - {id: a1, category: foreign-data, text: hi}  # a comment\n")
    kept = yamlio.safe_load(text)["attacks"][-1]
    assert kept == {"id": "kept-refund-safety-x-1", "category": "kept", "text": '{"turns": ["a", "b"]}'}
    assert keep(attacks, [FOUND]) == []  # the same conversation is not kept twice
    assert keep(attacks, [{**FOUND, "turns": ["other"]}]) == ["kept-refund-safety-x-2"]


def test_attacks_that_are_not_the_last_key_are_refused(tmp_path: Path) -> None:
    from kit.errors import KitInputError

    attacks = tmp_path / "attacks.yaml"
    attacks.write_text("attacks:\n  - {id: a1, category: foreign-data, text: hi}\nnotes: mine\n")
    with pytest.raises(KitInputError, match="is it the last key"):
        keep(attacks, [FOUND])
    assert attacks.read_text().endswith("notes: mine\n")  # untouched


def test_only_failed_adaptive_attacks_give_conversations(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger"
    ledger.mkdir()
    entry = {"session": "s1", "first_failed": {"guarded:x": 1}, "invariants": {"guarded:x": "x_safety"},
             "users": ["a", "b", "c"]}  # fmt: skip
    (ledger / "s1.json").write_text(json.dumps(entry))
    (ledger / "s2.json").write_text(json.dumps({"session": "s2", "first_failed": {}, "users": ["z"]}))
    rows = [
        {"success": False, "testCase": {"vars": {"kit_ledger": str(ledger)}, "metadata": {"case_id": "redteam/g/crescendo"}}},
        {"success": True, "testCase": {"vars": {"kit_ledger": str(ledger)}, "metadata": {"case_id": "redteam/g/jailbreak:tree"}}},
        {"success": False, "testCase": {"vars": {}, "metadata": {"case_id": "redteam/static/basic"}}},
    ]  # fmt: skip
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"results": {"results": rows}}))
    [found] = broken_conversations(results)
    assert found == {
        "attack": "redteam/g/crescendo",
        "session": "s1",
        "check": "guarded:x",
        "turn": 1,
        "turns": ["a", "b"],
        "invariant": "x_safety",  # the kept attack carries it, and its replay is judged by it
    }


def test_bad_input_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.kit]\n")
    assert main(["redteam", "keep", "--store", str(tmp_path / "none.duckdb")]) == 2
    assert "none.duckdb: no such store" in capsys.readouterr().err
    assert not (tmp_path / "none.duckdb").exists()
    results = tmp_path / "r.json"
    results.write_text("{}")
    with pytest.raises(Exception, match="not a Promptfoo results file"):
        broken_conversations(results)
    monkeypatch.setenv("KIT_REDTEAM_CORPUS", "generic")
    assert main(["redteam", "keep"]) == 2
    assert "generic attacks are not yours to extend" in capsys.readouterr().err


def test_a_lone_surrogate_is_kept_escaped_and_a_link_out_of_the_repository_refused(tmp_path: Path) -> None:
    from kit.commands.redteam import no_link_out
    from kit.errors import KitInputError

    attacks = tmp_path / "repo" / "redteam" / "attacks.yaml"
    attacks.parent.mkdir(parents=True)
    attacks.write_text("attacks:\n")
    lone = {**FOUND, "turns": ["refund \ud800 now", "b"]}  # JavaScript strings may hold a lone surrogate
    assert keep(attacks, [lone, {**FOUND, "turns": ["fine"]}]) == ["kept-refund-safety-x-1", "kept-refund-safety-x-2"]
    texts = [a["text"] for a in yamlio.safe_load(attacks.read_text())["attacks"]]
    assert json.loads(texts[0])["turns"][0] == "refund \\ud800 now"  # escaped, the other conversation kept too
    assert no_link_out(attacks, tmp_path / "repo") == attacks
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("attacks:\n")
    link = tmp_path / "repo" / "redteam" / "linked.yaml"
    link.symlink_to(outside)
    with pytest.raises(KitInputError, match="is a link out of the repository"):
        no_link_out(link, tmp_path / "repo")
    (tmp_path / "repo" / "out").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(KitInputError, match="is a link out of the repository"):
        no_link_out(tmp_path / "repo" / "out" / "elsewhere.yaml", tmp_path / "repo")
    assert outside.read_text() == "attacks:\n"
