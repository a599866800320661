"""YAML that lies or explodes: a duplicate key is exit 2 naming the file, the line and the key, in every YAML
the kit reads; an alias bomb is refused in bounded time; both through the one loader, kit/yamlio.py."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml

from kit import yamlio
from kit.case import load_suite
from kit.cli import main as kit
from kit.errors import KitInputError
from kit.gate.policy import load_policy
from kit.judge.rubrics import load_rubrics

TWO_CHECKS = """\
- id: refund
  input: refund my order
  checks:
    - {type: called, tool: issue_refund}
  checks:
    - {type: finished}
"""

# 9 aliases per level, 9 levels: 9**9 (387 million) "lol"s in a few hundred bytes.
BOMB = "".join(
    f"{n}: &{n} [{', '.join(['*' + p] * 9 if p else ['lol'] * 9)}]\n"
    for p, n in zip(["", *"abcdefgh"], "abcdefghi", strict=True)
)


def test_duplicate_key_in_a_case_is_exit_2_naming_file_line_and_key(tmp_path, capsys):
    f = tmp_path / "cases.yaml"
    f.write_text(TWO_CHECKS)
    assert kit(["lint", str(f)]) == 2
    err = capsys.readouterr().err
    assert str(f) in err and "line 5" in err and "duplicate key 'checks'" in err and "first at line 3" in err
    assert "Traceback" not in err


def test_kit_check_refuses_a_case_with_a_duplicate_key_not_judges_it_without_the_first_list(tmp_path, capsys):
    # Before: the second `checks:` won, the trace that never refunds passed.
    f = tmp_path / "cases.yaml"
    f.write_text(TWO_CHECKS)
    trace = tmp_path / "t.json"
    trace.write_text('{"case_id": "refund", "output": "done", "spans": []}')
    assert kit(["check", str(trace), "--cases", str(f)]) == 2
    assert "duplicate key 'checks'" in capsys.readouterr().err


def test_duplicate_key_in_invariants(tmp_path):
    (tmp_path / "invariants.yaml").write_text("safe:\n  - {type: no_pii}\nsafe:\n  - {type: finished}\n")
    (tmp_path / "c.yaml").write_text("- id: a\n  input: hi\n  invariants: [safe]\n")
    suite = load_suite(tmp_path)
    assert suite.errors, "a duplicate invariant name was accepted"
    text = str(suite.errors[0])
    assert "invariants.yaml" in text and "line 3" in text and "duplicate key 'safe'" in text


def test_duplicate_key_nested_in_a_check(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("- id: a\n  input: hi\n  checks:\n    - type: called\n      tool: x\n      tool: y\n")
    suite = load_suite(f)
    assert suite.errors and "line 6" in str(suite.errors[0]) and "duplicate key 'tool'" in str(suite.errors[0])


def test_duplicate_key_in_rubrics(tmp_path):
    f = tmp_path / "rubrics.yaml"
    f.write_text("rubrics:\n  - name: polite\n    criteria: be polite\n    criteria: be rude\n")
    with pytest.raises(KitInputError) as e:
        load_rubrics(f)
    assert str(f) in str(e.value) and "line 4" in str(e.value) and "duplicate key 'criteria'" in str(e.value)


def test_duplicate_key_in_gates(tmp_path):
    f = tmp_path / "gates.yaml"
    f.write_text("soft:\n  max_drop: 0.05\n  max_drop: 0.5\n")
    with pytest.raises(KitInputError) as e:
        load_policy(f)
    assert str(f) in str(e.value) and "line 3" in str(e.value) and "duplicate key 'max_drop'" in str(e.value)


def test_duplicate_key_in_the_attack_corpus(tmp_path):
    from kit_promptfoo.redteam import corpus

    f = tmp_path / "attacks.yaml"
    f.write_text("attacks:\n  - id: a1\n    id: a2\n    category: pii\n    text: hi\n")
    with pytest.raises(ValueError) as e:
        corpus.load(f)
    assert str(f) in str(e.value) and "line 3" in str(e.value) and "duplicate key 'id'" in str(e.value)


def test_merge_keys_may_override_what_they_merge():
    # `<<` is how YAML shares defaults: a key beside it replaces the merged one, which is no duplicate.
    data = yamlio.safe_load("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n")
    assert data["d"] == {"x": 3, "y": 2}


def test_equal_keys_spelt_differently_are_duplicates():
    with pytest.raises(yamlio.DuplicateKeyError, match="duplicate key 1"):
        yamlio.safe_load("1: a\n0x1: b\n")


def test_alias_bomb_in_case_metadata_is_refused_quickly(tmp_path, capsys):
    f = tmp_path / "c.yaml"
    body = "".join("    " + line + "\n" for line in BOMB.splitlines())
    f.write_text(f"- id: a\n  input: hi\n  metadata:\n{body}  checks: [{{type: finished}}]\n")
    assert len(f.read_bytes()) < 700
    started = time.perf_counter()
    assert kit(["lint", str(f)]) == 2
    assert time.perf_counter() - started < 5
    err = capsys.readouterr().err
    assert str(f) in err and "alias" in err and "Traceback" not in err


def test_alias_bomb_is_refused_by_every_entry_point():
    for load in (yamlio.safe_load, yamlio.safe_load_all):
        with pytest.raises(yamlio.AliasBombError):
            load(BOMB)


def test_a_recursive_alias_is_refused():
    with pytest.raises(yamlio.AliasBombError, match="its own anchor"):
        yamlio.safe_load("a: &a [1, *a]\n")


def test_shared_aliases_within_the_limit_load():
    data = yamlio.safe_load("a: &a [1, 2]\nb: [*a, *a, *a]\n")
    assert data["b"] == [[1, 2]] * 3


def test_errors_are_yaml_errors_with_one_line_messages():
    with pytest.raises(yaml.YAMLError) as e:
        yamlio.safe_load("a: 1\na: 2\n")
    assert str(e.value) == "line 2, column 1: duplicate key 'a' (first at line 1)"


def test_every_yaml_reader_of_the_kit_uses_the_shared_loader():
    root = Path(__file__).resolve().parents[2]
    offenders = []
    for folder in ("kit", "providers", "redteam", "deepeval_metrics"):
        for py in (root / folder).rglob("*.py"):
            text = py.read_text(encoding="utf-8")
            if py.name != "yamlio.py" and any(
                s in text for s in ("yaml.safe_load(", "yaml.load(", "yaml.load_all(", "yaml.safe_load_all(")
            ):
                offenders.append(str(py.relative_to(root)))
    assert offenders == []
