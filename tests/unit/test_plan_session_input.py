"""A plan DeepEval's session cannot use ends `deepeval test run` in one line naming KIT_PLAN and the file or
the agent, exit 2: a document of another version, one missing a field, one naming a case file that is gone,
one whose agent cannot be imported. Never pytest's INTERNALERROR traceback (`KeyError: 'sha256'`). The plugin's
start is called as pytest calls it: pytest prints `Exit: <the line>` and `deepeval test run` exits with its code."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from deepeval_metrics import pytest_plugin, runner
from kit.plan import PLAN_ENV, make_plan
from kit.settings import load_settings

AGENT = 'def good(text):\n    return {"final_output": "shipped", "finish_reason": "finish", "spans": []}\n'


def _unversioned(doc: dict[str, Any], _: Path) -> None:
    doc["version"] = 0


def _no_digest(doc: dict[str, Any], _: Path) -> None:
    del doc["case_files"][0]["sha256"]


def _no_store(doc: dict[str, Any], _: Path) -> None:
    del doc["settings"]["store"]  # read as the default store: another run's


def _case_file_gone(_: dict[str, Any], project: Path) -> None:
    (project / "cases.yaml").unlink()


def _agent_gone(doc: dict[str, Any], _: Path) -> None:
    doc["agent"] = doc["settings"]["agent"] = "no_such_desk:run"


BAD: dict[str, tuple[Callable[[dict[str, Any], Path], None], str]] = {
    "another version": (_unversioned, "plan.json: KIT_PLAN: not a plan document of version 1"),
    "a field missing": (_no_digest, "plan.json: KIT_PLAN: not a plan document of this kit: case_files.0.sha256"),
    "a setting missing": (_no_store, "plan.json: KIT_PLAN: not a plan document of this kit: settings.store missing"),
    "a case file gone": (_case_file_gone, "cases.yaml: KIT_PLAN: the case file is gone since the plan was made"),
    "an agent gone": (
        _agent_gone,
        "plan.json: KIT_PLAN: the plan's agent no_such_desk:run: cannot import no_such_desk",
    ),
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "session_agent.py").write_text(AGENT)
    (tmp_path / "cases.yaml").write_text('id: a\ninput: "hi"\nchecks:\n  - {type: contains, text: shipped}\n')
    (tmp_path / "pyproject.toml").write_text(
        '[tool.kit]\ncases = "cases.yaml"\nagent = "session_agent:good"\nstore = "store.duckdb"\n'
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    runner.plan.cache_clear()
    yield tmp_path
    runner.plan.cache_clear()


def _bad_plan(project: Path, how: str) -> Path:
    doc = make_plan(load_settings(root=project, env={}), defer_agent=True).document()
    BAD[how][0](doc, project)
    path = project / "plan.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("how", list(BAD))
def test_the_sessions_start_names_the_bad_plan_in_one_line(project, monkeypatch, how):
    monkeypatch.setenv(PLAN_ENV, str(_bad_plan(project, how)))
    monkeypatch.setattr(pytest_plugin, "pin_deepeval_io", lambda **_: None)  # DeepEval's IO stays this process's
    monkeypatch.setattr(pytest_plugin, "_SESSION", None)
    with pytest.raises(pytest.exit.Exception) as stopped:
        pytest_plugin.pytest_configure(SimpleNamespace(option=SimpleNamespace(dist="no")))  # type: ignore[arg-type]
    assert stopped.value.returncode == 2
    line = stopped.value.msg
    assert line.startswith(f"kit: {project}/") and BAD[how][1] in line and "\n" not in line, line
    assert pytest_plugin._SESSION is None  # no run was started in any store
