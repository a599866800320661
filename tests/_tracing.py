"""Whether a test can run a command under strace here (importable from every test folder: tests/ is on the path)."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess


@functools.cache
def strace_unusable() -> str | None:
    """None, or why strace cannot trace a command here: not installed, or not allowed to trace. A process has
    one tracer at most, so the tests run under `strace -f` cannot start one of their own; a container may forbid
    ptrace altogether."""
    if shutil.which("strace") is None:
        return "strace is not installed (.ci/run installs it)"
    probe = subprocess.run(["strace", "-f", "-qq", "-o", os.devnull, "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        said = probe.stderr.strip().splitlines()
        return f"strace cannot trace here (the tests already traced?): {said[-1] if said else probe.returncode}"
    return None
