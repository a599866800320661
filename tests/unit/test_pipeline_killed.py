"""A killed `make evals` takes its stages' processes with it: each tool runs in a process group of its own,
out of reach of the terminal's Ctrl-C, so the pipeline ends those groups itself when it is told to stop,
when its parent dies, and (through its guard) when it is killed outright."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from _procs import gone, wait_for
from _tracing import strace, strace_unusable

ROOT = Path(__file__).resolve().parents[2]
HOW = ("SIGTERM", "SIGINT", "SIGKILL", "parent-dies")

# One import of the kit, then a pipeline forked for each way of stopping it; "parent-dies" gets a parent of
# its own (make, say) that waits for it. Each pipeline runs two stages at the same time, each a shell that
# leaves a long-sleeping grandchild and waits for it. The launcher writes each child's exit code.
LAUNCHER = """\
import os, sys
from pathlib import Path
from kit.pipeline.executor import Stage, Step, run_stages

root = Path(sys.argv[1])

def stage(out, name):
    pids = f"{out}/{name}.pids"
    tool = ("sh", "-c", f"sleep 300 & echo $$ $! > {pids}.tmp; mv {pids}.tmp {pids}; wait")
    return Stage(name, name, (Step(name, tool),), together=True, timeout=600)

def pipeline(out):
    (out / "pipeline.pid").write_text(str(os.getpid()))
    run_stages([stage(out, "promptfoo"), stage(out, "redteam")], {"PATH": "/usr/bin:/bin"}, out)
    os._exit(0)

children = {}
for how in sys.argv[2:]:
    out = root / how
    out.mkdir()
    pid = os.fork()
    if pid == 0:
        if how == "parent-dies":
            (out / "make.pid").write_text(str(os.getpid()))
            if os.fork() == 0:
                pipeline(out)
            os.wait()
            os._exit(0)
        pipeline(out)
    children[pid] = how
for _ in children:
    pid, status = os.wait()
    (root / children[pid] / "exit").write_text(str(os.waitstatus_to_exitcode(status)))
"""


def _pids(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()]


def _groups(root: Path) -> list[int]:
    """The stages' process groups (each shell leads its own)."""
    return [_pids(f)[0] for f in root.glob("*/*.pids")]


# Also run as the commands are audited, every process traced: under ptrace a signal the pipeline sent itself from
# its parent-watching thread was taken by that thread every time, and the main thread slept on in its join.
@pytest.mark.parametrize("traced", [False, True], ids=["plain", "under-strace"])
def test_every_stages_processes_end_with_make_evals_however_it_is_stopped(tmp_path: Path, traced: bool) -> None:
    if traced and strace_unusable():
        pytest.skip(str(strace_unusable()))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    launcher = subprocess.Popen(
        [*(strace(os.devnull) if traced else []), sys.executable, "-c", LAUNCHER, str(tmp_path), *HOW],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        files = [tmp_path / how / f"{stage}.pids" for how in HOW for stage in ("promptfoo", "redteam")]
        assert wait_for(lambda: all(f.exists() for f in files), 60), "the stages never started"
        stage_pids = {
            how: _pids(tmp_path / how / "promptfoo.pids") + _pids(tmp_path / how / "redteam.pids") for how in HOW
        }
        assert not any(gone(pid) for pids in stage_pids.values() for pid in pids)
        started = time.monotonic()
        for how in HOW:
            if how == "parent-dies":
                os.kill(_pids(tmp_path / how / "make.pid")[0], signal.SIGKILL)
            else:
                os.kill(_pids(tmp_path / how / "pipeline.pid")[0], getattr(signal, how))
        _, stderr = launcher.communicate(timeout=10)
        for how in HOW:
            assert wait_for(lambda how=how: all(map(gone, stage_pids[how])), 5), (
                f"{how}: a stage's process outlived make"
            )
        pipeline = _pids(tmp_path / "parent-dies" / "pipeline.pid")[0]
        assert wait_for(lambda: gone(pipeline), 5), "the pipeline outlived its parent"
        # Told to stop, the pipeline ends its groups, says so, and exits as the signal says.
        for how in ("SIGTERM", "SIGINT"):
            assert (tmp_path / how / "exit").read_text() == str(128 + getattr(signal, how))
            assert f"stopped by {how}; 2 stage process group(s) ended" in stderr
        assert time.monotonic() - started < 5
    finally:  # a failing run leaves nothing behind
        launcher.kill()
        for pid in [_pids(f)[0] for f in tmp_path.glob("*/pipeline.pid")]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for group in _groups(tmp_path):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(group, signal.SIGKILL)


# A stop signal between a tool's start and the listing of its group (a stage thread the host has not run again
# yet): the tool, started in a session of its own, is ended with the rest. On a stage thread the signal's
# handler waits for the listing; on the main thread, the signal is acted on right after it.
BETWEEN = """\
import os, signal, subprocess, sys, threading, time
from kit.pipeline import groups

pid_file, where = sys.argv[1], sys.argv[2]

def start():
    with groups.launching():
        proc = subprocess.Popen(["sleep", "300"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        open(pid_file, "w").write(str(proc.pid))
        if where == "main":
            os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)  # a thread the host has not run again yet
        groups.started(proc.pid)

with groups.ending_with_this_process():
    if where == "main":
        start()
    else:
        threading.Thread(target=start, daemon=True).start()
        while not os.path.exists(pid_file):
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(30)
"""


@pytest.mark.parametrize("where", ["stage-thread", "main"])
def test_a_stop_between_a_tools_start_and_its_listing_ends_that_tool_too(tmp_path: Path, where: str) -> None:
    pid_file = tmp_path / "tool.pid"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run(
        [sys.executable, "-c", BETWEEN, str(pid_file), where], env=env, capture_output=True, text=True, timeout=60
    )
    tool = _pids(pid_file)[0]
    try:
        assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
        assert "stopped by SIGTERM; 1 stage process group(s) ended" in proc.stderr
        assert wait_for(lambda: gone(tool), 3), "the tool outlived the pipeline"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(tool, signal.SIGKILL)


# Killed outright between a tool's start and the listing of its group (a stage thread the host has not run
# again yet): no handler runs, and the guard was never told of that group. The tool carries the pipeline's mark,
# and so does what it started: the guard ends them by it.
UNLISTED = """\
import os, sys, time
from pathlib import Path
from kit.pipeline import groups
from kit.pipeline.executor import Stage, Step, run_stages

out = Path(sys.argv[1])
listed = groups.started

def late(pgid):
    time.sleep(30)
    listed(pgid)

groups.started = late
pids = out / "tool.pids"
tool = ("sh", "-c", f"sleep 300 & echo $$ $! > {pids}.tmp; mv {pids}.tmp {pids}; wait")
run_stages([Stage("promptfoo", "promptfoo", (Step("promptfoo", tool),), timeout=600)], {"PATH": "/usr/bin:/bin"}, out)
"""


def test_a_pipeline_killed_before_it_listed_a_tools_group_still_takes_that_tool_with_it(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    pipeline = subprocess.Popen([sys.executable, "-c", UNLISTED, str(tmp_path)], env=env, stderr=subprocess.PIPE)
    pids_file = tmp_path / "tool.pids"
    try:
        assert wait_for(pids_file.exists, 60), "the tool never started"
        tool = _pids(pids_file)  # the shell, which leads its group, and the sleep it left behind
        pipeline.kill()
        pipeline.wait(timeout=10)
        assert wait_for(lambda: all(map(gone, tool)), 5), "the unlisted tool outlived the pipeline"
    finally:
        pipeline.kill()
        if pids_file.exists():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(_pids(pids_file)[0], signal.SIGKILL)
