"""Every make target that runs a stage hands the pipeline the same variables as `make evals`: `make
deepeval-evals VARIANT=double_refund` runs the faulted agent (it passed on the unfaulted one when only
`evals` exported them). The recipe's Python is replaced by a script that prints what it was given."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Each target and the stage it runs alone (KIT_MAKE_ONLY; `evals` runs them all).
STAGE_TARGETS = {
    "evals": None,
    "deepeval-evals": "deepeval",
    "promptfoo-eval": "promptfoo",
    "promptfoo-redteam": "redteam",
}


VARS = ("VARIANT=double_refund", "AGENT=my agent;x", "CASES=golden/cases", "CONCURRENCY=3")


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
@pytest.mark.parametrize("target", sorted(STAGE_TARGETS))
def test_a_stage_target_passes_the_make_variables(target: str, tmp_path: Path) -> None:
    printer = tmp_path / "py"
    printer.write_text("#!/bin/sh\nenv | grep '^KIT_MAKE_' | sort\n")
    printer.chmod(0o755)
    out = subprocess.run(
        ["make", "-s", "-C", str(ROOT), "-o", "packages", "-o", ".venv/.installed", target, f"PY={printer}", *VARS],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    got = dict(line.split("=", 1) for line in out.stdout.splitlines())
    assert got["KIT_MAKE_VARIANT"] == "double_refund"
    assert got["KIT_MAKE_AGENT"] == "my agent;x"  # one argument, as typed
    assert got["KIT_MAKE_CASES"] == "golden/cases" and got["KIT_MAKE_CONCURRENCY"] == "3"
    assert got.get("KIT_MAKE_ONLY") == STAGE_TARGETS[target]
