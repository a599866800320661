"""`kit init` in a repository an earlier version set up: its redteam/invariants.yaml is the user's and stays, but
redteam/case.yaml (written now, or already there) names generic invariants that file lacks. `kit init --check`
names them; `kit init` adds them beside the user's own, so no attack errors on an unknown invariant."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.case import load_suite
from kit.cli import main

OLD = "# mine\nno_leak:\n  checks:\n    - {type: no_pii}\nmy_rule:\n  checks:\n    - {type: not_called, tool: wire}\n"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "desk.py").write_text("def run(text):\n    return []\n")
    monkeypatch.chdir(tmp_path)
    for var in ("KIT_AGENT", "KIT_CASES", "KIT_STORE", "KIT_REDTEAM_CORPUS", "KIT_REDTEAM_INVARIANTS", "KIT_PLAN"):
        monkeypatch.delenv(var, raising=False)
    assert main(["init", "--agent", "desk:run"]) == 0
    return tmp_path


def test_an_old_layout_gets_the_generic_invariants_its_case_names(repo: Path, capsys) -> None:
    (repo / "redteam/invariants.yaml").write_text(OLD)  # an earlier version's: no no_exfiltration
    (repo / "redteam/case.yaml").unlink()
    capsys.readouterr()
    assert main(["init", "--check"]) == 1
    out = capsys.readouterr().out
    assert "redteam/invariants.yaml: lacks no_exfiltration, which redteam/case.yaml names: `kit init` adds them" in out
    assert main(["init"]) == 0
    text = (repo / "redteam/invariants.yaml").read_text()
    assert text.startswith(OLD)  # the user's own bundles, as they were
    suite = load_suite(repo / "redteam/case.yaml", repo / "redteam/invariants.yaml")
    assert suite.errors == [] and [c.id for c in suite.cases] == ["redteam-attack"]
    assert {c.invariant for c in suite.cases[0].checks} >= {"no_leak", "no_exfiltration"}
    capsys.readouterr()
    assert main(["init", "--check"]) == 0, capsys.readouterr().out
    assert main(["init"]) == 0
    assert (repo / "redteam/invariants.yaml").read_text() == text  # added once
