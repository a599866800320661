"""`kit init` in a user's repository: the layout written, nothing overwritten, a second run reporting what is
there, `--check` naming the generated files that differ; and what makes the installed kit work there (package
data, no file read relative to the kit's source tree)."""

from __future__ import annotations

import fnmatch
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from kit.case import load_suite
from kit.cli import main
from kit.commands.init import PROMPTFOO_VERSION
from kit.settings import load_settings

KIT = Path(__file__).resolve().parents[2]
AGENT = 'def run(text):\n    return {"final_output": "hi", "finish_reason": "finish", "spans": []}\n'


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "myagent.py").write_text(AGENT)
    monkeypatch.chdir(tmp_path)
    for var in ("KIT_AGENT", "KIT_CASES", "KIT_STORE", "KIT_RUBRICS", "KIT_GATES"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path


def init(*args: str) -> int:
    return main(["init", *args])


def test_init_writes_the_layout_and_the_settings_point_at_it(repo, capsys):
    assert init("--agent", "myagent:run", "--cases", "evals/cases.yaml") == 0
    for path in [
        "promptfooconfig.yaml",
        "providers/agent_provider.py",
        "providers/oracle_assert.cjs",
        "providers/store_hook.py",
        "providers/cases.py",
        "redteam/attacks.yaml",
        "tests/evals/conftest.py",
        "tests/evals/test_cases.py",
        "evals/cases.yaml",
        "Makefile",
        "package.json",
        ".env",
        ".github/workflows/evals.yml",
    ]:
        assert (repo / path).is_file(), path
    config = yaml.safe_load((repo / "promptfooconfig.yaml").read_text())
    [provider] = config["providers"]
    assert provider["id"] == "file://redteam/target.py"  # every attack judged by the suite's invariants too
    assert provider["config"] == {"agent": "myagent:run"}
    assert config["tests"] == "file://providers/cases.py:generate_tests"
    settings = load_settings()
    assert settings.agent == "myagent:run"
    assert settings.project_file == repo / "pyproject.toml"
    assert Path(settings.cases).resolve() == repo / "evals/cases.yaml"
    assert Path(settings.store).resolve() == repo / ".kit/evals.duckdb"
    suite = load_suite(settings.cases)
    assert [c.id for c in suite.cases] == ["example"] and not suite.errors
    assert "PROMPTFOO_DISABLE_TELEMETRY=1" in (repo / ".env").read_text()
    assert re.search(r"^evals:", (repo / "Makefile").read_text(), re.M)


def test_init_overwrites_nothing_and_appends_its_blocks(repo, capsys):
    (repo / "pyproject.toml").write_text('[project]\nname = "desk"\n')
    (repo / "Makefile").write_text("test:\n\tpytest\n")
    (repo / "promptfooconfig.yaml").write_text("description: mine\n")
    (repo / "evals").mkdir()
    (repo / "evals/cases.yaml").write_text("- id: mine\n  input: hi\n  checks: [{type: finished}]\n")
    assert init("--agent", "myagent:run", "--cases", "evals/cases.yaml") == 0
    out = capsys.readouterr().out
    assert (repo / "promptfooconfig.yaml").read_text() == "description: mine\n"
    assert "promptfooconfig.yaml: already there, left as it is" in out
    assert [c.id for c in load_suite("evals/cases.yaml").cases] == ["mine"]  # no example over the user's cases
    project = tomllib.loads((repo / "pyproject.toml").read_text())
    assert project["project"]["name"] == "desk" and project["tool"]["kit"]["agent"] == "myagent:run"
    makefile = (repo / "Makefile").read_text()
    assert makefile.startswith("test:\n\tpytest\n") and "\nevals:" in makefile
    assert "pyproject.toml: appended the kit's block" in out and "Makefile: appended the kit's block" in out

    assert init() == 0  # again: the agent and cases come from [tool.kit]; everything is there
    again = capsys.readouterr().out
    assert "kit init: 0 files written or extended" in again
    assert (repo / "Makefile").read_text() == makefile


def test_check_names_the_generated_files_that_differ(repo, capsys):
    assert init("--agent", "myagent:run") == 0
    capsys.readouterr()
    assert init("--check") == 0
    assert "0 of" in capsys.readouterr().out
    (repo / "providers/agent_provider.py").write_text("# changed\n")
    (repo / ".npmrc").unlink()
    # The user's to edit: never compared itself, but the red team's plugins follow it.
    attacks = repo / "redteam/attacks.yaml"
    attacks.write_text(attacks.read_text() + '  - {id: mine, category: foreign-data, text: "Who else ordered?"}\n')
    assert init("--check") == 1
    out = capsys.readouterr().out
    assert "providers/agent_provider.py: differs from what kit" in out
    assert ".npmrc: missing" in out
    assert "redteam/attacks.yaml: yours (not compared)" in out
    assert "promptfooconfig.yaml: differs from what kit 0.1.0 writes (redteam.plugins: changed)" in out
    assert "3 of" in out


@pytest.mark.parametrize("spec", ["myagent", "my agent:run", ":run"])
def test_a_bad_agent_spec_is_refused(repo, capsys, spec):
    assert init("--agent", spec) == 2
    assert "module:callable" in capsys.readouterr().err
    assert not (repo / "promptfooconfig.yaml").exists()


def test_no_agent_and_no_terminal_asks_for_the_flag(repo, capsys, monkeypatch):
    monkeypatch.setattr("sys.stdin", open("/dev/null"))  # noqa: SIM115
    assert init() == 2
    assert "--agent module:callable" in capsys.readouterr().err


def test_promptfoo_tests_come_from_the_cases_and_a_broken_file_is_a_test_of_its_own(repo):
    from kit_promptfoo.cases import generate_tests

    assert init("--agent", "myagent:run", "--cases", "evals") == 0
    (repo / "evals/broken.yaml").write_text("- id: b\n  input: hi\n  checks: [{type: teleport}]\n")
    tests = generate_tests()
    assert [t["vars"]["case_id"] for t in tests[:1]] == ["example"]
    assert tests[0]["vars"]["case_file"] == "evals/example.yaml"
    [broken] = tests[1:]
    assert broken["vars"]["case_file"] == "evals/broken.yaml" and "teleport" in broken["description"]


def test_the_package_json_pins_the_promptfoo_the_kit_runs():
    pinned = json.loads((KIT / "package.json").read_text())["dependencies"]["promptfoo"]
    assert pinned == PROMPTFOO_VERSION


def _package_folder(f: Path) -> Path:
    """The folder of the package a data file ships with: the nearest one above it with an __init__.py."""
    return next(d for d in f.parents if (d / "__init__.py").is_file())


def test_every_template_and_data_file_is_package_data():
    """A non-editable install carries only the files pyproject.toml lists: each template and data file must
    match a package-data glob of its package."""
    setuptools = tomllib.loads((KIT / "pyproject.toml").read_text())["tool"]["setuptools"]
    data = setuptools["package-data"]
    assert "package-dir" not in setuptools  # every package lives in the folder of its name
    wanted = {
        "kit.templates": KIT / "kit/templates",
        "kit_promptfoo": KIT / "kit_promptfoo",
        "kit_promptfoo.redteam": KIT / "kit_promptfoo/redteam",
    }
    for package, folder in wanted.items():
        files = [p for p in folder.rglob("*") if p.is_file() and p.suffix in (".tmpl", ".cjs", ".yaml")]
        # a subpackage's files are its own package's data (kit_promptfoo.redteam's, not kit_promptfoo's)
        files = [p for p in files if "__pycache__" not in p.parts and _package_folder(p) == folder]
        assert files
        for f in files:
            rel = f.relative_to(folder).as_posix()
            assert any(fnmatch.fnmatch(rel, g) and rel.count("/") == g.count("/") for g in data[package]), rel


def test_no_code_reads_files_relative_to_the_source_tree():
    """Project files come from kit.settings.project_root(); only a package's own data lies beside it."""
    offenders = []
    for folder in ("kit", "deepeval_metrics", "kit_promptfoo", "providers", "redteam"):
        for f in (KIT / folder).rglob("*.py"):
            text = f.read_text()
            if re.search(r"__file__\)?(\.resolve\(\))?\.parent\.parent|parents\[\d\]", text):
                offenders.append(str(f.relative_to(KIT)))
    assert offenders == []


def test_the_agent_module_is_found_from_the_project_root_without_pythonpath(repo, monkeypatch):
    import sys

    from kit.plan import current_plan

    assert init("--agent", "rooted_desk_agent:run") == 0
    (repo / "rooted_desk_agent.py").write_text(AGENT)
    (repo / "deep" / "down").mkdir(parents=True)
    monkeypatch.chdir(repo / "deep" / "down")  # a tool started below the root (Promptfoo's worker, say)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(repo))])
    monkeypatch.delitem(sys.modules, "rooted_desk_agent", raising=False)
    monkeypatch.delenv("KIT_PLAN", raising=False)
    monkeypatch.delenv("KIT_AGENT", raising=False)
    agent = current_plan().agent  # what every front end runs: the plan's agent, imported from the project's root
    assert agent.name == "rooted_desk_agent:run"


def test_a_users_package_json_and_env_are_kept_and_completed(repo, capsys):
    (repo / "package.json").write_text('{"name": "web", "dependencies": {"react": "19.0.0"}}\n')
    (repo / ".env").write_text("API_URL=http://127.0.0.1:3000\n")
    assert init("--agent", "myagent:run") == 0
    out = capsys.readouterr().out
    assert json.loads((repo / "package.json").read_text())["dependencies"] == {"react": "19.0.0"}
    assert f'package.json: already there, left as it is: add "promptfoo": "{PROMPTFOO_VERSION}"' in out
    env = (repo / ".env").read_text()
    assert env.startswith("API_URL=http://127.0.0.1:3000\n") and "PROMPTFOO_DISABLE_TELEMETRY=1" in env
    assert init("--check") == 1
    out = capsys.readouterr().out
    assert ".env: has the kit's block" in out
    assert f"package.json: differs: promptfoo not pinned, kit 0.1.0 runs {PROMPTFOO_VERSION}" in out
    deps = {"react": "19.0.0", "promptfoo": PROMPTFOO_VERSION}
    (repo / "package.json").write_text(json.dumps({"name": "web", "dependencies": deps}))
    assert init("--check") == 0  # only the Promptfoo pin of the user's own package.json is compared


def test_the_checkout_holds_what_kit_init_writes(tmp_path: Path):
    """The kit's checkout is its own first user: its providers/ and redteam/ Python and JavaScript are exactly
    the thin files `kit init` writes into a user's repository, over the installed kit_promptfoo."""
    subprocess.run(
        [sys.executable, "-m", "kit.cli", "init", "--agent", "myagent:run", "--cases", "evals/cases.yaml"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    thin = [p for d in ("providers", "redteam") for p in sorted((KIT / d).iterdir()) if p.suffix in (".py", ".cjs")]
    assert {p.name for p in thin} >= {"agent_provider.py", "oracle_assert.cjs", "generator.py", "hooks.py"}
    for p in thin:
        rel = p.relative_to(KIT)
        assert (tmp_path / rel).read_text() == p.read_text(), rel
