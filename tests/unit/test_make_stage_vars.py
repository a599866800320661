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


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_the_makefile_kit_init_writes_passes_the_make_variables(tmp_path: Path) -> None:
    """A team's `make evals CASES=... AGENT=...` reaches the kit as typed (the Makefile an older `kit init`
    wrote ran the settings' cases whatever was typed)."""
    from importlib.resources import files

    (tmp_path / "Makefile").write_text(files("kit.templates").joinpath("Makefile.tmpl").read_text())
    (tmp_path / "package.json").write_text("{}")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / ".kit-installed").touch()
    printer = tmp_path / "py"
    printer.write_text("#!/bin/sh\necho \"args: $*\"\nenv | grep '^KIT_MAKE_' | sort\n")
    printer.chmod(0o755)
    out = subprocess.run(
        ["make", "-s", "-C", str(tmp_path), "evals", f"KIT_PYTHON={printer}", *VARS],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "args: -m kit.pipeline --from-make"
    got = dict(line.split("=", 1) for line in lines[1:])
    assert got["KIT_MAKE_AGENT"] == "my agent;x" and got["KIT_MAKE_CASES"] == "golden/cases"
    assert got["KIT_MAKE_VARIANT"] == "double_refund" and got["KIT_MAKE_CONCURRENCY"] == "3"


def test_variables_typed_for_a_makefile_that_drops_them_are_refused(monkeypatch, capsys) -> None:
    """`make evals CASES=x` through an `evals` target that does not hand CASES on: exit 2 naming it, never a
    run of the settings' cases."""
    from kit.pipeline.evals import parse
    from kit.settings import typed_make_variables

    assert typed_make_variables({"MAKEFLAGS": r"s -- CASES=evals/a\ b.yaml AGENT=x:y OTHER=1"}) == ["AGENT", "CASES"]
    assert typed_make_variables({"MAKEFLAGS": "s -j2"}) == []
    monkeypatch.setenv("MAKEFLAGS", "s -- CASES=evals/greet.yaml")
    with pytest.raises(SystemExit) as exit_:
        parse([])
    assert exit_.value.code == 2
    assert "CASES typed on make's command line" in capsys.readouterr().err
    assert parse(["--from-make"]).from_make  # the Makefile that hands them on is not refused
