"""A broken stage fails the build by name; every stage has a time limit; a tool's leftover child cannot hold
a stage open; make's variables reach the pipeline as arguments, never through a shell."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _procs import gone, wait_for

from kit.pipeline import executor
from kit.pipeline.evals import _broken
from kit.pipeline.executor import TIMED_OUT, Stage, StageResult, Step, run_stages
from kit.pipeline.summary import Collected

ROOT = Path(__file__).resolve().parents[2]


def _collected(*runs: tuple[str, str]) -> Collected:
    rows = [{"run_id": f"r{i}", "source": s, "kind": k, "model": None, "agent": None} for i, (s, k) in enumerate(runs)]
    return Collected(rows, [], {}, [])


def _result(stage: Stage, code: int) -> StageResult:
    return StageResult(stage, code, 1.0, Path("x.log"))


def test_a_stage_that_exits_with_no_verdict_breaks_the_build_even_if_its_source_wrote() -> None:
    """The red team died on Promptfoo's database race while the eval (same source) stored its run."""
    promptfoo = Stage("promptfoo", "", (), (("promptfoo", "golden"),), judged=frozenset({100}))
    redteam = Stage("redteam", "", (), (("promptfoo", "redteam"),), judged=frozenset({100}))
    data = _collected(("promptfoo", "golden"))
    assert _broken([_result(promptfoo, 100), _result(redteam, 1)], data) == [("redteam", "exit 1")]
    # Exit 0 but its run missing from the store (a hook that failed to ingest): broken too.
    assert _broken([_result(redteam, 0)], data) == [("redteam", "no promptfoo redteam run reached the store")]
    # A judged failure (tests failed) with its run stored is the gate's to decide, not a broken stage.
    assert _broken([_result(promptfoo, 100)], data) == []
    timed = _result(promptfoo, TIMED_OUT)
    assert _broken([timed], data) == [("promptfoo", "timed out")]


def test_a_hanging_tool_is_killed_at_the_stage_time_limit(tmp_path: Path) -> None:
    hang = Step("hang", (sys.executable, "-c", "import time; time.sleep(600)"))
    started = time.perf_counter()
    [r] = run_stages([Stage("slow", "s", (hang,), timeout=1.5)], {"PATH": os.environ["PATH"]}, tmp_path)
    assert r.code == TIMED_OUT and r.broke
    assert time.perf_counter() - started < 10
    assert "ran past its time limit of 1.5 s" in (tmp_path / "slow.log").read_text()


def test_a_hanging_in_process_step_is_abandoned_at_the_time_limit(tmp_path: Path) -> None:
    [r] = run_stages([Stage("kit", "k", (Step("k", call=lambda: time.sleep(600) or 0),), timeout=1.0)], {}, tmp_path)
    assert r.code == TIMED_OUT


def test_a_child_left_holding_the_output_does_not_hold_the_stage(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tool exits at once; a child it started keeps stdout open for ten minutes. The stage ends with the
    tool (after a short grace, shortened here), and that child is killed."""
    monkeypatch.setattr(executor, "OUTPUT_GRACE", 0.5)
    leave = (
        "import subprocess, sys; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); "
        "open(sys.argv[1], 'w').write(str(p.pid)); print('tool done')"
    )
    pid_file = tmp_path / "child.pid"
    started = time.perf_counter()
    [r] = run_stages(
        [Stage("agent", "a", (Step("t", (sys.executable, "-c", leave, str(pid_file))),), timeout=300)],
        {"PATH": os.environ["PATH"]},
        tmp_path,
    )
    assert r.code == 0 and time.perf_counter() - started < 20
    log = (tmp_path / "agent.log").read_text()
    assert "tool done" in log and "holds its output open: stopped after 0.5 s" in log
    child = int(pid_file.read_text())
    assert wait_for(lambda: gone(child), 10), "the child holding the output outlived its stage"


def test_make_variables_never_reach_a_shell(tmp_path: Path) -> None:
    """`make evals AGENT='x:y;touch f;#'` must not run the `touch`, and a path with a space is one path."""
    planted = tmp_path / "pwned"
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
    proc = subprocess.run(
        [
            "make",
            "--no-print-directory",
            "evals",
            f"AGENT=x:y;touch {planted};#",
            f"CASES={tmp_path / 'my cases'}",
            f"EVALS_OUT={tmp_path / 'out'}",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert not planted.exists()
    assert proc.returncode != 0
    assert "cannot import x" in proc.stderr and "touch" in proc.stderr, proc.stderr  # one argument, as typed
