"""The repository a red-team target test works in: a desk agent of the user's, a case whose invariant guards
issue_refund behind a confirmation, and [tool.kit] naming the desk; the test runs from its root."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml


def write_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, desk: str) -> Path:
    """`desk` as `<module>.py`, the agent `<module>:run`, with the case `rt` of case.yaml; `tmp_path`."""
    (tmp_path / "pyproject.toml").write_text(f'[tool.kit]\nagent = "{module}:run"\n')
    (tmp_path / f"{module}.py").write_text(desk)
    inv = {"refund_safety": {"checks": [{"type": "guarded", "tool": "issue_refund", "requires": "confirm"}]}}
    (tmp_path / "invariants.yaml").write_text(yaml.safe_dump(inv))
    (tmp_path / "case.yaml").write_text(yaml.safe_dump([{"id": "rt", "input": "x", "invariants": ["refund_safety"]}]))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for var in ("KIT_AGENT", "KIT_PLAN", "KIT_CASES"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path
