"""A user's repository for the from-trace tests: [tool.kit] cases in golden/cases, a suite copied in, no KIT_*
variable of the calling shell, and the working directory there."""

from __future__ import annotations

import shutil
from pathlib import Path

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
