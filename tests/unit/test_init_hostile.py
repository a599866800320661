"""`kit init` against a hostile or mistaken repository: links out of it, values that are not safe to paste into
TOML or YAML, and a `[tool.kit]` naming another agent. Each is an error or written safely, never a
half-applied init and never a file that every kit command then refuses."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from kit import yamlio
from kit.cli import main
from kit.settings import load_settings


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "desk.py").write_text("def run(text):\n    return []\n")
    monkeypatch.chdir(root)
    for var in ("KIT_AGENT", "KIT_CASES", "KIT_STORE", "KIT_PLAN"):
        monkeypatch.delenv(var, raising=False)
    return root


def test_a_link_out_of_the_repository_is_refused_before_anything_is_written(repo, tmp_path, capsys) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".env").write_text("SECRET=1\n")
    (repo / ".env").symlink_to(elsewhere / ".env")
    assert main(["init", "--agent", "desk:run"]) == 2
    assert ".env: is a link out of the repository" in capsys.readouterr().err
    assert (elsewhere / ".env").read_text() == "SECRET=1\n"
    assert not (repo / "promptfooconfig.yaml").exists()  # nothing half-written


def test_a_folder_linked_out_of_the_repository_is_refused(repo, tmp_path, capsys) -> None:
    (tmp_path / "out").mkdir()
    (repo / "providers").symlink_to(tmp_path / "out")
    assert main(["init", "--agent", "desk:run"]) == 2
    assert "providers/agent_provider.py: is a link out of the repository" in capsys.readouterr().err
    assert list((tmp_path / "out").iterdir()) == []


def test_a_dangling_link_is_refused(repo, tmp_path, capsys) -> None:
    (repo / ".gitignore").symlink_to(tmp_path / "nowhere" / ".gitignore")
    assert main(["init", "--agent", "desk:run"]) == 2
    assert ".gitignore: is a link to nothing" in capsys.readouterr().err
    assert not (tmp_path / "nowhere").exists()


def test_a_link_inside_the_repository_is_followed(repo) -> None:
    (repo / "shared").mkdir()
    (repo / "shared" / "Makefile").write_text("test:\n\ttrue\n")
    (repo / "Makefile").symlink_to(repo / "shared" / "Makefile")
    assert main(["init", "--agent", "desk:run"]) == 0
    assert "\nevals:" in (repo / "shared" / "Makefile").read_text()


@pytest.mark.parametrize(
    ("flag", "value"),
    [
        ("--purpose", 'A desk.\nIt must never "refund" twice \\ or leak.\x7f\ttab'),
        ("--cases", 'evals\\weird "cases".yaml'),
    ],
)
def test_values_are_written_by_the_formats_library_or_escaped(repo, flag, value) -> None:
    assert main(["init", "--agent", "desk:run", flag, value]) == 0
    tool = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["kit"]
    got = tool["redteam"]["purpose"] if flag == "--purpose" else tool["cases"]
    assert got == value
    load_settings()  # every kit command reads these settings: they load
    config = yamlio.safe_load((repo / "promptfooconfig.yaml").read_text())
    if flag == "--purpose":
        assert config["redteam"]["purpose"] == value


def test_an_agent_with_a_trailing_newline_is_refused(repo, capsys) -> None:
    assert main(["init", "--agent", "desk:run\n"]) == 2
    assert "module:callable" in capsys.readouterr().err
    assert not (repo / "pyproject.toml").exists()


def test_a_cases_path_out_of_the_repository_is_refused(repo, capsys) -> None:
    assert main(["init", "--agent", "desk:run", "--cases", "../theirs/cases.yaml"]) == 2
    assert "leads out of the repository" in capsys.readouterr().err


def test_another_agent_in_tool_kit_is_an_error_and_force_says_what_it_changed(repo, capsys) -> None:
    (repo / "pyproject.toml").write_text(
        '[project]\nname = "desk"\n\n[tool.kit]\nagent = "old:run"\ncases = "old.yaml"\n'
    )
    assert main(["init", "--agent", "desk:run", "--cases", "evals/cases.yaml"]) == 2
    err = capsys.readouterr().err
    assert "agent is 'old:run' there, 'desk:run' here" in err and "cases is 'old.yaml' there" in err
    assert "--force" in err
    assert not (repo / "promptfooconfig.yaml").exists()
    assert main(["init", "--agent", "desk:run", "--cases", "evals/cases.yaml", "--force"]) == 0
    out = capsys.readouterr().out
    assert "--force: [tool.kit] agent 'old:run' -> 'desk:run'" in out
    assert "--force: [tool.kit] cases 'old.yaml' -> 'evals/cases.yaml'" in out
    project = tomllib.loads((repo / "pyproject.toml").read_text())
    assert project["tool"]["kit"]["agent"] == "desk:run" and project["project"]["name"] == "desk"
    assert (
        yamlio.safe_load((repo / "promptfooconfig.yaml").read_text())["providers"][0]["config"]["agent"] == "desk:run"
    )


def test_check_names_a_link_out_of_the_repository_and_reads_nothing_through_it(repo, tmp_path, capsys) -> None:
    assert main(["init", "--agent", "desk:run"]) == 0
    (tmp_path / "theirs.mk").write_text("evals:\n\ttrue\n")
    (repo / "Makefile").unlink()
    (repo / "Makefile").symlink_to(tmp_path / "theirs.mk")
    capsys.readouterr()
    assert main(["init", "--check"]) == 1
    assert "Makefile: differs: is a link out of the repository" in capsys.readouterr().out


def test_another_purpose_is_a_conflict_and_force_rewrites_it(repo, capsys) -> None:
    assert main(["init", "--agent", "desk:run", "--purpose", "Old desk."]) == 0
    assert main(["init", "--purpose", 'New "desk".\nNever refunds.']) == 2
    assert "redteam.purpose is 'Old desk.' there" in capsys.readouterr().err
    assert main(["init", "--purpose", 'New "desk".\nNever refunds.', "--force"]) == 0
    assert "--force: [tool.kit] redteam.purpose 'Old desk.' -> " in capsys.readouterr().out
    purpose = tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["kit"]["redteam"]["purpose"]
    assert purpose == 'New "desk".\nNever refunds.'
