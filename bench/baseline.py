"""A git revision's files beside this checkout, for the benches' before-and-after rounds."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def extract(rev: str, into: Path, paths: tuple[str, ...] = ("kit",)) -> Path:
    """`paths` of the repository as of `rev` (all of it when empty) in `into`, byte-compiled once, as this
    checkout's modules are: with PYTHONDONTWRITEBYTECODE set, each of the baseline's processes would otherwise
    compile the modules it imports and count that as the baseline's time. Put `into` first on PYTHONPATH, and
    run `python -m` from another folder than this checkout (it puts the working directory first)."""
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", rev, *paths], cwd=ROOT, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(into)], check=True)
    return into
