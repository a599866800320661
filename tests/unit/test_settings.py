"""kit.settings: defaults < [tool.kit] < KIT_* variables < command line; unknown keys are errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from kit.errors import KitInputError
from kit.settings import Settings, load_settings


def _project(tmp_path: Path, body: str) -> Path:
    (tmp_path / "pyproject.toml").write_text(body)
    return tmp_path


def test_defaults_without_project_file(tmp_path: Path) -> None:
    s = load_settings(root=tmp_path, env={})
    assert s.project_file is None
    assert s.agent is None
    assert s.cases == Path("golden")
    assert s.store == Path(".kit/evals.duckdb")
    assert s.agent_policy == "deterministic"
    assert s.agent_timeout == 60.0
    assert s.judge.model is None


def test_sources_in_order_of_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _project(
        tmp_path,
        '[tool.kit]\nagent = "proj:run"\nvariant = "proj"\nagent_timeout = 5\n'
        '[tool.kit.judge]\nmodel = "proj-judge"\nretries = 3\n',
    )
    env = {"KIT_VARIANT": "env", "KIT_JUDGE_MODEL": "env-judge", "KIT_AGENT_TIMEOUT": ""}
    s = load_settings({"variant": "cli", "agent": None, "judge": {"model": None}}, env=env)
    assert s.project_file == tmp_path / "pyproject.toml"
    assert s.agent == "proj:run"  # a None override overrides nothing
    assert s.variant == "cli"
    assert s.agent_timeout == 5.0  # an empty variable counts as unset
    assert s.judge.model == "env-judge"
    assert s.judge.retries == 3


def test_settings_are_frozen(tmp_path: Path) -> None:
    s = load_settings(root=tmp_path, env={})
    with pytest.raises(ValueError):
        s.agent = "x:y"  # type: ignore[misc]


def test_project_found_upward_and_paths_relative_to_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _project(tmp_path, '[tool.kit]\ncases = "suite"\n[tool.kit.redteam]\ncorpus = "rt/a.yaml"\n')
    sub = tmp_path / "a" / "b"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    s = load_settings(env={})
    assert s.cases == tmp_path.resolve() / "suite"
    assert s.redteam.corpus == tmp_path.resolve() / "rt/a.yaml"


def test_nearest_pyproject_without_tool_kit_stops_the_search(tmp_path: Path) -> None:
    _project(tmp_path, '[tool.kit]\nagent = "outer:run"\n')
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert load_settings(root=inner, env={}).agent is None


def test_unknown_key_names_file_and_key(tmp_path: Path) -> None:
    _project(tmp_path, '[tool.kit]\nagnet = "x:y"\n')
    with pytest.raises(KitInputError) as e:
        load_settings(root=tmp_path, env={})
    assert str(tmp_path / "pyproject.toml") in str(e.value)
    assert "agnet" in str(e.value)


def test_unknown_nested_key_names_it(tmp_path: Path) -> None:
    _project(tmp_path, "[tool.kit.judge]\nmodle = 'm'\n")
    with pytest.raises(KitInputError, match=r"judge\.modle"):
        load_settings(root=tmp_path, env={})


def test_bad_environment_value_names_the_variable(tmp_path: Path) -> None:
    with pytest.raises(KitInputError, match=r"environment: setting KIT_AGENT_TIMEOUT"):
        load_settings(root=tmp_path, env={"KIT_AGENT_TIMEOUT": "soon"})


def test_bad_policy_in_project_file(tmp_path: Path) -> None:
    _project(tmp_path, '[tool.kit]\nagent_policy = "random"\n')
    with pytest.raises(KitInputError, match="agent_policy"):
        load_settings(root=tmp_path, env={})


def test_invalid_toml_is_input_error(tmp_path: Path) -> None:
    _project(tmp_path, "[tool.kit\n")
    with pytest.raises(KitInputError, match="not valid TOML"):
        load_settings(root=tmp_path, env={})


def test_env_round_trip(tmp_path: Path) -> None:
    s = load_settings({"agent": "m:f", "judge": {"model": "j"}}, root=tmp_path, env={})
    env = s.env()
    assert env["KIT_AGENT"] == "m:f"
    assert env["KIT_JUDGE_MODEL"] == "j"
    assert "KIT_VARIANT" not in env
    again = load_settings(root=tmp_path, env=env)
    assert again.model_dump(exclude={"project_file"}) == s.model_dump(exclude={"project_file"})


def test_repository_project_file_is_valid() -> None:
    root = Path(__file__).resolve().parents[2]
    s = load_settings(root=root, env={})
    assert isinstance(s, Settings)
    assert s.project_file == root / "pyproject.toml"


@pytest.mark.parametrize("argv", [["run"], ["report"], ["gate"], ["compare", "a", "b"]])
def test_every_command_reports_a_bad_project_file_as_exit_2(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kit.cli import main as kit

    _project(tmp_path, '[tool.kit]\nagnet = "x:y"\n')
    monkeypatch.chdir(tmp_path)
    assert kit(argv) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'pyproject.toml'}: unknown setting [tool.kit] agnet" in err
    assert "Traceback" not in err
