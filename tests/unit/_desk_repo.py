"""A user's repository for the from-trace tests: [tool.kit] cases in golden/cases, a suite copied in, no KIT_*
variable of the calling shell, and the working directory there."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "from_trace"
KIT_VARIABLES = ("KIT_PLAN", "KIT_CASES", "KIT_INVARIANTS", "KIT_STORE", "KIT_RECORDINGS", "KIT_RECORDINGS_MODE")


def desk_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, name: str = "desk", suite: str = "suite") -> Path:
    """`tmp_path` as the repository `name`, its golden/ a copy of the fixtures' `suite`."""
    (tmp_path / "pyproject.toml").write_text(f'[project]\nname = "{name}"\n[tool.kit]\ncases = "golden/cases"\n')
    shutil.copytree(FIXTURES / suite, tmp_path / "golden")
    for var in KIT_VARIABLES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def invoked(agent: str, mode: str, folder: Path, case: Any, *, timeout: float) -> Any:
    """The kit's runner (`kit.runner.invoke`) on the agent `module:function`, its model calls under recordings
    `mode` in `folder`; what `invoke` returns."""
    import openai  # noqa: F401  # a warm agent process, as production's was: its latency is the calls'

    from kit.recording import Recordings, install, uninstall
    from kit.runner import invoke
    from kit.runner.agents import load_agent

    install(Recordings(mode, folder))
    try:
        return invoke(load_agent(agent), case, 0, timeout=timeout)
    finally:
        uninstall()
