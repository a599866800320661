"""How `make evals` runs its stages: each stage's steps in order into its own log, the `together` stages at
the same time after the others, every stage under its time limit.

A step is a kit function called in this process (in a thread of its own, its printed output routed to the
stage's log: kit.pipeline.routing) or a tool's own command (in a process group of its own, killed with its
children past the deadline). What the stages are, and in which order, is kit.pipeline.stages' to say.
"""

from __future__ import annotations

import os
import re
import resource
import select
import shlex
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from kit.pipeline import groups, routing


@dataclass(frozen=True)
class Step:
    label: str
    argv: tuple[str, ...] = ()  # a tool's own command, or
    call: Callable[[], int] | None = None  # a kit function, called in this process
    env: Mapping[str, str] = field(default_factory=dict)  # extra variables for the command
    ok: frozenset[int] = frozenset({0})  # exit codes that mean the step worked
    always: bool = False  # runs even after an earlier step of the stage failed


@dataclass(frozen=True)
class Stage:
    name: str
    note: str
    steps: tuple[Step, ...]
    # The runs it must leave in the store, as (source, kind): one missing means the stage broke.
    writes: tuple[tuple[str, str], ...] = ()
    together: bool = False  # runs at the same time as the other `together` stages (no forking in process)
    # Exit codes (besides 0) that mean the tool ran and its verdict is in the store (tests failed).
    judged: frozenset[int] = frozenset()
    timeout: float | None = None  # seconds for the whole stage; past it, its processes are killed
    required: bool = False  # a failure stops the build: no later stage runs (lint: bad input, no agent call)


TIMED_OUT = 124  # a stage's code when it ran past its time limit (as timeout(1) says it)


@dataclass(frozen=True)
class StageResult:
    stage: Stage
    code: int
    seconds: float
    log: Path
    cpu: float | None = None  # CPU seconds of the stage's steps and every process they waited for

    @property
    def broke(self) -> bool:
        """Exited with a code that is neither success nor a judged failure (a crash, a time-out, bad
        input): whatever it wrote, the build fails, naming the stage."""
        return self.code != 0 and self.code not in self.stage.judged

    @property
    def outcome(self) -> str:
        """What happened, in words: "passed", "judged failures" (the tool ran and its verdict is in the
        store: the gate decides), "broken: exit N", "broken: timed out after S s", or "bad input: exit 2"
        (a required stage: lint)."""
        if self.code == 0:
            return "passed"
        if not self.broke:
            return "judged failures"
        if self.code == TIMED_OUT:
            return f"broken: timed out after {self.stage.timeout:g} s"
        if self.stage.required and self.code == 2:  # the kit's own code for bad input
            return "bad input: exit 2"
        return f"broken: exit {self.code}"


ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\r")
PROGRESS_EVERY = 15.0  # seconds between progress lines of a long step
# Lines that say nothing about why a stage failed: make's own epilogue, rules, blank lines.
_NOISE = re.compile(r"^\s*$|^make(\[\d+\])?: \*\*\*|^[=\-_~*#. ]{3,}$|^\s*\|\s*$")
_ERROR = re.compile(r"(?i)\b(error|exception|traceback|failed|refused|cannot|no such|not found|denied)\b")


def error_tail(text: str, n: int = 6) -> list[str]:
    """The lines that explain a failure: the last meaningful lines of the log, led by the last line that
    names an error when it lies further up (a traceback's last line, a tool's `Error:`)."""
    lines = [ln.rstrip() for ln in ANSI.sub("", text).splitlines() if not _NOISE.search(ln)]
    lines = [ln for ln in lines if not ln.startswith("$ ")] or lines
    tail = lines[-n:]
    errors = [ln for ln in lines[:-n] if _ERROR.search(ln)]
    return ([errors[-1], "..."] if errors and not any(_ERROR.search(ln) for ln in tail) else []) + tail


_say_lock = threading.Lock()


def _say(*lines: str) -> None:
    """Lines to the terminal, never interleaved with another stage's block."""
    with _say_lock:
        print("\n".join(lines), flush=True)


def run_stages(chosen: Sequence[Stage], env: Mapping[str, str], logs: Path) -> list[StageResult]:
    """Every stage, in the order given; the `together` ones at the same time, after the others. A `required`
    stage that fails stops there: the results end with it, and no later stage ran."""
    done: dict[int, StageResult] = {}
    with routing.routed(), groups.ending_with_this_process():
        for i, stage in enumerate(chosen):
            if not stage.together:
                done[i] = run_stage(stage, env, logs)
                if stage.required and done[i].code != 0:
                    return [done[j] for j in sorted(done)]
        together = [(i, s) for i, s in enumerate(chosen) if s.together]
        if together:
            with ThreadPoolExecutor(len(together), thread_name_prefix="stage") as pool:
                futures = {i: pool.submit(run_stage, s, env, logs) for i, s in together}
            done.update({i: f.result() for i, f in futures.items()})
    return [done[i] for i in range(len(chosen))]


def run_stage(stage: Stage, env: Mapping[str, str], logs: Path) -> StageResult:
    """Run the stage's steps in order into logs/<name>.log; its code is the first failing step's, or
    TIMED_OUT when the stage ran past its time limit (its processes are then killed, and so is any child
    they left holding the log's pipe)."""
    log = logs / f"{stage.name}.log"
    _say(f"==> {stage.name}: {stage.note}")
    started = time.perf_counter()
    deadline = started + stage.timeout if stage.timeout else None
    # CPU: this thread's own, plus its tools' (each reaped with its rusage). A stage that runs alone
    # takes every reaped child instead, which also counts the workers a kit step forks.
    own, children = time.thread_time(), _children_cpu()
    tools = in_process = 0.0
    code = 0
    with log.open("w") as f:
        for step in stage.steps:
            if code != 0 and not step.always:
                continue
            if code == TIMED_OUT:
                break
            got, used = _run_step(stage.name, step, env, f, started, deadline)
            if step.call is not None:
                in_process += used  # its own thread's CPU
            else:
                tools += used
            if got == TIMED_OUT:
                f.write(f"(stage {stage.name!r} ran past its time limit of {stage.timeout:g} s in {step.label!r})\n")
                code = TIMED_OUT
            elif got not in step.ok and code == 0:
                code = got
                f.write(f"(step {step.label!r} exited {got})\n")
    seconds = time.perf_counter() - started
    cpu = time.thread_time() - own + in_process + (tools if stage.together else _children_cpu() - children)
    tail = error_tail(log.read_text(errors="replace")) if code != 0 else []
    result = StageResult(stage, code, seconds, log, cpu)
    said = f"<== {stage.name}: {result.outcome} in {seconds:.1f} s (CPU {cpu:.1f} s); log {log}"
    _say(said, *(f"    | {line[:200]}" for line in tail))
    return result


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run_step(
    name: str, step: Step, env: Mapping[str, str], f: TextIO, started: float, deadline: float | None
) -> tuple[int, float]:
    """The step's exit code, and the CPU seconds of the processes it started (an in-process step: none)."""
    if step.call is not None:
        return _call(step, f, deadline)
    return _command(name, step, env, f, started, deadline)


def _call(step: Step, f: TextIO, deadline: float | None) -> tuple[int, float]:
    """A kit function in this process, its output in the stage's log. It runs in a thread of its own so
    that the stage's time limit holds: past it the stage fails (the thread is abandoned; the kit's workers
    die with this process)."""
    assert step.call is not None
    f.write(f"$ {step.label}  (in process)\n")
    f.flush()
    box: dict[str, Any] = {}

    def work() -> None:
        started = time.thread_time()
        with routing.to(f):
            try:
                box["code"] = step.call()  # type: ignore[misc]
            except SystemExit as e:
                box["code"] = e.code if isinstance(e.code, int) else 1
            except BaseException:  # a crash in one stage must not take the others down
                traceback.print_exc(file=f)
                box["code"] = 1
            finally:
                sys.stdout.flush()
                box["cpu"] = time.thread_time() - started

    worker = threading.Thread(target=work, name=f"step:{step.label[:40]}", daemon=True)
    worker.start()
    worker.join(None if deadline is None else max(0.0, deadline - time.perf_counter()))
    if worker.is_alive():
        return TIMED_OUT, 0.0
    return box.get("code", 1), box.get("cpu", 0.0)


def _command(
    name: str, step: Step, env: Mapping[str, str], f: TextIO, started: float, deadline: float | None
) -> tuple[int, float]:
    """A tool's own command, its output streamed to the stage's log; (exit code, CPU of it and its children).
    The tool runs in a process group of its own: past the deadline the whole group is killed. When the tool
    exits, the stage does not wait for the end of its output: a child it left behind may hold the pipe
    open forever, so reading stops shortly after (and that group is killed)."""
    f.write(f"$ {shlex.join(step.argv)}\n")
    f.flush()
    with groups.launching():
        try:
            proc = subprocess.Popen(
                step.argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                env={**env, **step.env, **groups.marked()},
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as e:
            f.write(f"cannot start: {e}\n")
            return 127, 0.0
        groups.started(proc.pid)
    try:
        return _follow(name, step, f, started, deadline, proc)
    finally:
        groups.ended(proc.pid)


def _follow(
    name: str, step: Step, f: TextIO, started: float, deadline: float | None, proc: subprocess.Popen[bytes]
) -> tuple[int, float]:
    """The running tool's output into the log until it exits, or its group killed at the deadline."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    last = [""]
    lines = [0]
    stop = threading.Event()

    def pump() -> None:
        # Colour codes and carriage-return progress bars are stripped: the log is plain text.
        pending = b""
        while not stop.is_set():
            ready, _, _ = select.select([fd], [], [], 0.2)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            pending += chunk
            *complete, pending = pending.split(b"\n")
            for raw in complete:
                _log_line(raw)
        if pending:
            _log_line(pending)
        f.flush()

    def _log_line(raw: bytes) -> None:
        text = ANSI.sub("", raw.decode("utf-8", errors="replace"))
        f.write(text + "\n")
        lines[0] += 1
        if text.strip():
            last[0] = text.strip()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    status: int | None = None
    used: Any = None
    next_progress = time.perf_counter() + PROGRESS_EVERY
    while status is None:
        pid, got, rusage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            status, used = got, rusage
            break
        now = time.perf_counter()
        if deadline is not None and now >= deadline:
            groups.kill_group(proc.pid)
            _, got, rusage = os.wait4(proc.pid, 0)
            status, used = got, rusage
            stop.set()
            reader.join(2.0)
            proc.stdout.close()
            return TIMED_OUT, used.ru_utime + used.ru_stime
        if now >= next_progress:
            # Long work shows it is alive: elapsed time, lines logged, the latest of them.
            what = name if step.label == name else f"{name}: {step.label}"
            _say(f"    ... {what}: {now - started:.0f} s, {lines[0]} log lines; {last[0][:100]}")
            next_progress = now + PROGRESS_EVERY
        time.sleep(0.05)
    reader.join(OUTPUT_GRACE)
    if reader.is_alive():  # the tool exited, a child of its own still holds the pipe: stop reading
        f.write(f"(the tool exited; a process it left holds its output open: stopped after {OUTPUT_GRACE:g} s)\n")
        stop.set()
        groups.kill_group(proc.pid)
        reader.join(2.0)
    proc.stdout.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, used.ru_utime + used.ru_stime


OUTPUT_GRACE = 5.0  # seconds the log is still read after its tool exited
