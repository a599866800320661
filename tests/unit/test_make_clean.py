"""`make clean` removes everything the project's commands make, as .gitignore lists it, and keeps the tracked
files and the user's own .env.local."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
USERS_OWN = {".env.local"}


def _made(entry: str) -> tuple[str, bool]:
    """A path that the .gitignore entry matches, as a command would make it, and whether it is a folder."""
    path = entry.strip("/").replace("*", "agent_eval_kit")
    return (f"kit/{path}" if path == "__pycache__" else path), entry.endswith("/")


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_clean_removes_what_git_ignores_and_keeps_the_rest(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Makefile", tmp_path)
    entries = [line.strip() for line in (ROOT / ".gitignore").read_text().splitlines()]
    made = [_made(e) for e in entries if e and not e.startswith("#") and e not in USERS_OWN]
    made += [("redteam/redteam.yaml", False), ("tests/unit/__pycache__", True)]
    kept = ["kit/checks.py", "redteam/attacks.yaml", "golden/cases.yaml", *USERS_OWN]
    for path, folder in made:
        target = tmp_path / path / "inside" if folder else tmp_path / path  # a folder with something in it
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("made\n")
    for path in kept:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("kept\n")

    done = subprocess.run(["make", "clean"], cwd=tmp_path, capture_output=True, text=True, timeout=60)

    assert done.returncode == 0, done.stderr
    assert [p for p, _ in made if (tmp_path / p).exists()] == []
    assert [p for p in kept if (tmp_path / p).read_text() != "kept\n"] == []
