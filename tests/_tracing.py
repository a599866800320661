"""Running a test's command under strace: whether it can be done here, and the command line that does it
(importable from every test folder: tests/ is on the path)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess


def strace(log: str | os.PathLike[str], calls: str = "connect") -> list[str]:
    """The prefix that traces `calls` (strace's `trace=` list) of a command and of every process it starts into
    `log`, stopping the processes only at those calls."""
    return ["strace", "--seccomp-bpf", "-f", "-qq", "-e", f"trace={calls}", "-o", str(log)]


@functools.cache
def strace_unusable() -> str | None:
    """None, or why strace cannot trace a command here: not installed, or not allowed to trace. A process has
    one tracer at most, so the tests run under `strace -f` cannot start one of their own; a container may forbid
    ptrace altogether."""
    if shutil.which("strace") is None:
        return "strace is not installed (.ci/run installs it)"
    probe = subprocess.run([*strace(os.devnull), "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        said = probe.stderr.strip().splitlines()
        return f"strace cannot trace here (the tests already traced?): {said[-1] if said else probe.returncode}"
    return None
