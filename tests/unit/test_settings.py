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


# One validation per setting, whichever source gives it: a flag, a variable, `make`, or [tool.kit].
@pytest.mark.parametrize("value", ["0", "-1", "5000"])
def test_concurrency_is_refused_alike_from_flag_variable_and_project(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    from kit.cli import main as kit

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("KIT_CONCURRENCY", raising=False)
    assert kit(["run", "-q", "--no-store", "--concurrency", value]) == 2
    flag = capsys.readouterr().err
    assert "setting --concurrency (concurrency): " in flag and "Traceback" not in flag, flag
    monkeypatch.setenv("KIT_CONCURRENCY", value)
    assert kit(["run", "-q", "--no-store"]) == 2
    variable = capsys.readouterr().err
    assert "setting KIT_CONCURRENCY (concurrency): " in variable
    monkeypatch.delenv("KIT_CONCURRENCY")
    _project(tmp_path, f"[tool.kit]\nconcurrency = {value}\n")
    assert kit(["run", "-q", "--no-store"]) == 2
    project = capsys.readouterr().err
    assert "setting [tool.kit] concurrency: " in project
    # The same words for the same value, from every source.
    why = {e.split("concurrency): ")[-1].split("concurrency: ")[-1] for e in (flag, variable, project)}
    assert len(why) == 1, why


def test_make_concurrency_is_the_same_validation(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("KIT_")}
    for value in ("0", "5000"):
        proc = subprocess.run(
            [sys.executable, "-m", "kit.pipeline", "--from-make"],
            env={**env, "KIT_MAKE_CONCURRENCY": value},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 2 and "setting concurrency: " in proc.stderr, proc.stderr


def test_a_slots_dir_that_is_a_file_is_a_settings_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from kit.cli import main as kit

    a_file = tmp_path / "slots"
    a_file.write_text("not a folder")
    with pytest.raises(KitInputError, match=r"setting KIT_SLOTS_DIR \(slots_dir\): .* is not a folder"):
        load_settings(root=tmp_path, env={"KIT_SLOTS_DIR": str(a_file)})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KIT_SLOTS_DIR", str(a_file))
    code = kit(["run", "-q", "--no-store", "--agent", "kit.doubles.slow_agent:sync_agent"])
    err = capsys.readouterr().err
    assert code == 2 and "KIT_SLOTS_DIR" in err and "OSError" not in err and "Traceback" not in err, err
    with pytest.raises(KitInputError, match=r"KIT_SLOTS_DIR \(slots_dir\): no such folder"):
        load_settings(root=tmp_path, env={"KIT_SLOTS_DIR": str(tmp_path / "gone")})
    folder = tmp_path / "slots-ok"
    folder.mkdir()
    assert load_settings(root=tmp_path, env={"KIT_SLOTS_DIR": str(folder)}).slots_dir == folder


@pytest.mark.parametrize(
    ("var", "value", "words"),
    [
        ("KIT_AGENT_FIXTURES", "/no/such/shop.json", "is not a file"),
        ("KIT_REGEX_TIMEOUT", "0", "greater than 0"),
        ("KIT_CHECK_TIMEOUT", "nan", "finite number"),
        ("KIT_STORE_LOCK_TIMEOUT", "-1", "greater than 0"),
        ("KIT_AGENT_MODEL_PRICE", "1", "two numbers"),
        ("KIT_AGENT_MODEL_PRICE", "1,-2", "greater than or equal to 0"),
    ],
)
def test_every_kit_variable_is_a_validated_setting(tmp_path: Path, var: str, value: str, words: str) -> None:
    with pytest.raises(KitInputError, match=f"setting {var} ") as e:
        load_settings(root=tmp_path, env={var: value})
    assert words in str(e.value)


def test_the_model_has_one_setting_name(tmp_path: Path) -> None:
    from kit.settings import ENV

    s = load_settings(root=tmp_path, env={"KIT_AGENT_MODEL": "m-2024-08-06", "KIT_MODEL": "other-2024-01-01"})
    assert s.agent_model == "m-2024-08-06"
    assert not [var for var in ENV if var.startswith("KIT_MODEL")]


def test_no_kit_variable_is_read_outside_the_settings() -> None:
    """KIT_* variables are read in kit.settings alone (kit.plan names the plan document's; kit.offline and
    the DeepEval adapter's offline module the tools' own switches), when settings load, never at import."""
    import re

    root = Path(__file__).resolve().parents[2]
    literal = re.compile(r"""(environ\.get|getenv|environ\[|env\.get)\(?\s*["']KIT_""")
    constant = re.compile(r"""^(\w+)\s*(?::\s*\w+\s*)?=\s*["']KIT_""", re.M)
    allowed = {"kit/settings.py", "kit/plan.py", "kit/offline.py", "deepeval_metrics/offline.py"}
    found = []
    for top in ("kit", "deepeval_metrics"):
        for path in sorted((root / top).rglob("*.py")):
            rel = path.relative_to(root).as_posix()
            if rel in allowed:
                continue
            text = path.read_text(encoding="utf-8")
            names = "|".join(constant.findall(text))
            by_name = re.compile(rf"(environ\.get|getenv|environ\[|env\.get)\(?\s*({names})\b") if names else None
            for n, line in enumerate(text.splitlines(), 1):
                if literal.search(line) or (by_name is not None and by_name.search(line)):
                    found.append(f"{rel}:{n}: {line.strip()}")
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    "var", ["KIT_STORE", "KIT_GATES", "KIT_RUBRICS", "KIT_INVARIANTS", "KIT_REPLAY_RUNS", "KIT_REDTEAM_CORPUS"]
)
def test_a_file_setting_naming_a_folder_is_refused_by_name(tmp_path: Path, var: str) -> None:
    with pytest.raises(KitInputError, match=rf"setting {var} \(.*\): {tmp_path}: is a folder, not a file"):
        load_settings(root=tmp_path, env={var: str(tmp_path)})
    # A file that does not exist yet is no error here: a store is created, a missing gates file is the defaults.
    assert load_settings(root=tmp_path, env={var: str(tmp_path / "later.yaml")})
