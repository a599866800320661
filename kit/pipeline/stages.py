"""The stages of `make evals`, and how they run.

A stage is a few steps. A step is either a kit function called in this process (lint, the kit's runner,
ingest) or a tool's own command (`deepeval test run`, the Promptfoo launcher), never `make` or `kit`
again. Every step's output goes to the stage's log; a stage that fails is reported and the others still
run, so one broken tool never hides the others' results.

The tools' stages (DeepEval, Promptfoo eval, the red team) run at the same time, after lint and the kit's
runner: each is mostly one tool process waiting on its own workers, so together they fill the cores that
each alone leaves idle. The kit's runner runs alone because it forks its workers, which is unsafe while
other threads run.

Run once, judge everywhere: the kit's runner calls the agent once per case and attempt and saves those runs
(kit.runner.recorded); DeepEval and the Promptfoo eval judge the same runs (KIT_REPLAY_RUNS) and call no
agent. Only the red team calls the agent again, once per attack. Every stage is run from the one plan
(kit.plan), has a time limit, and says which runs it must leave in the store: a stage that breaks, or whose
runs are missing, fails the build by name.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import resource
import select
import shlex
import shutil
import signal
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

from kit.case import find_upwards
from kit.offline import DEEPEVAL, STATE
from kit.pipeline import routing
from kit.plan import Plan
from kit.settings import project_root

PROMPTFOO_EVAL = ("eval", "-c", "promptfooconfig.yaml", "--no-progress-bar", "--no-table", "-o")
# No `-o`: the generated tests go to redteam.yaml beside the config all the same, and with `-o` Promptfoo
# also writes the whole eval's results over that file as YAML when it ends (seconds, for nothing).
PROMPTFOO_REDTEAM = ("redteam", "run", "-c", "redteam/promptfooconfig.yaml", "--force")


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


def kit_command(name: str, argv: list[str]) -> Callable[[], int]:
    """A `kit` command as a function of this process: its module's own parser and main."""

    def call() -> int:
        module = importlib.import_module(f"kit.commands.{name}")
        parser = argparse.ArgumentParser(prog=f"kit {name}")
        module.configure(parser)
        try:
            args = parser.parse_args(argv)
        except SystemExit as e:  # argparse's way to say "bad arguments"
            return int(e.code or 0)
        return int(module.main(args) or 0)

    return call


def kit_step(name: str, argv: list[str], **kw: bool) -> Step:
    return Step(f"kit {name} {shlex.join(argv)}", call=kit_command(name, argv), **kw)


def _tool(name: str) -> str:
    """A console script installed beside this Python (the project's venv), else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.exists() else (shutil.which(name) or name)


def kit_stage(plan: Plan, runs_file: Path, shards: Path | None = None) -> Stage:
    """The kit's runner on the plan's agent (or variant of the reference agent), saving every run for the
    other front ends to judge; or the merge of CI shards, whose runs are saved the same way."""
    from kit.runner.store_writer import RunRequest, run_plan

    if shards is not None and shards.is_dir() and any(shards.iterdir()):
        parts = sorted(str(p) for p in shards.iterdir())

        def merged() -> int:
            return merge_shards(plan, parts, runs_file)

        return Stage(
            "kit",
            "the kit's runner (merged from CI shards)",
            (Step(f"kit run --merge {len(parts)} shards", call=merged),),
            (("kit", "golden"),),
            judged=frozenset({1}),
            timeout=plan.settings.stage_timeout,
        )

    def run() -> int:
        return run_plan(plan, RunRequest(quiet=True, save_runs=str(runs_file)))

    who = (
        plan.agent.name
        if not plan.reference
        else "the reference agent" + (f" (variant {plan.variant})" if plan.variant else "")
    )
    return Stage(
        "kit",
        f"the kit's runner on {who}",
        (Step(f"kit run (plan: {plan.agent.name} on {plan.cases})", call=run),),
        (("kit", "golden"),),
        judged=frozenset({1}),
        timeout=plan.settings.stage_timeout,
    )


def merge_shards(plan: Plan, parts: list[str], runs_file: Path) -> int:
    """`kit run --merge` of the CI matrix's shard files into the plan's store, then their runs saved for
    DeepEval and the Promptfoo eval to judge (the agent ran in the shards; nothing here calls it)."""
    from kit.runner.recorded import write_rows
    from kit.runner.store_writer import RunRequest, run_merge
    from kit.store import open_store
    from kit.store import queries as q

    code, run_ids = run_merge(RunRequest(quiet=True, merge=parts, store=str(plan.store)))
    if code == 2:
        return code
    with open_store(plan.store).connect() as con:
        n = write_rows(runs_file, q.recorded_runs(con, run_ids))
    print(f"kit: {n} runs of {', '.join(run_ids)} saved for the other front ends: {runs_file}")
    return code


OUT = Path(".kit")  # where the summary, reports and logs go; Promptfoo's configs and results under promptfoo/
DEFAULT_CORPUS = Path("redteam/attacks.yaml")  # the reference agent's shop attacks (the settings' default)
GENERIC_CORPUS = "generic"  # the red team's own corpus for any agent (kit_promptfoo.redteam.corpus says where)


def own_promptfoo_config(plan: Plan) -> bool:
    """Another agent, or cases other than golden/, get a generated Promptfoo config: the committed
    promptfooconfig.yaml is the reference agent on golden/ and stays untouched."""
    return not plan.reference or Path(plan.cases).resolve() != (project_root() / "golden").resolve()


def _launcher() -> tuple[str, ...]:
    return (sys.executable, "-m", "kit_promptfoo.run_promptfoo")


def promptfoo_stage(plan: Plan, work: Path, runs_file: Path | None) -> Stage:
    """`work`: this invocation's folder for generated configs and results (concurrent runs never share one).
    The eval judges the kit stage's runs (`runs_file`): no agent call; None: it calls the agent."""
    out_json = str((work / "golden.json").resolve())
    if own_promptfoo_config(plan):
        config = (work / "promptfooconfig.yaml").resolve()
        gen = [sys.executable, "-m", "kit_promptfoo.genconfig", "--golden", str(Path(plan.cases).resolve())]
        gen += ["--out", str(config)]
        if not plan.reference:
            gen += ["--agent", plan.agent.name] + (["--model", plan.model] if plan.model else [])
        first = Step("genconfig", tuple(gen))
        note = f"promptfoo eval ({plan.agent.name} on {plan.cases}; config {config})"
        eval_argv = ("eval", "-c", str(config), "--no-progress-bar", "--no-table", "-o", out_json)
    else:
        first = Step("genconfig", (sys.executable, "-m", "kit_promptfoo.genconfig", "--check"))
        note = "promptfoo eval (golden cases)"
        eval_argv = (*PROMPTFOO_EVAL, out_json)
    return Stage(
        "promptfoo",
        note + (", judging the kit stage's runs" if runs_file is not None else ""),
        (
            first,
            Step(
                "promptfoo eval",
                (*_launcher(), *eval_argv),
                env={"KIT_REPLAY_RUNS": str(runs_file)} if runs_file is not None else {},
            ),
            # Promptfoo's store hook stores the eval; this stores it only if the hook could not (by eval id).
            kit_step("ingest", ["promptfoo", out_json, "--store", str(plan.store)], always=True),
        ),
        (("promptfoo", "golden"),),
        together=True,
        judged=frozenset({100}),
        timeout=plan.settings.stage_timeout,
    )


def redteam_stage(plan: Plan, work: Path) -> Stage:
    """The red team of the plan's agent, once per attack. The reference agent runs the committed
    configuration, with its deliberately vulnerable control target; another agent gets one generated for it
    (no control target: that belongs to the reference agent), from the user's purpose, corpus and
    invariants where given, with as many attacks in flight as `concurrency` allows."""
    settings = plan.settings
    out_json = str((work / "redteam.json").resolve())
    steps: list[Step] = []
    env: dict[str, str] = {}
    writes: tuple[tuple[str, str], ...] = (("promptfoo", "redteam"),)
    if not plan.reference:
        rt = settings.redteam
        config = (work / "redteam" / "promptfooconfig.yaml").resolve()
        gen = [sys.executable, "-m", "kit_promptfoo.redteam.config", "--agent", plan.agent.name]
        gen += ["--out", str(config)]
        if plan.model:
            gen += ["--model", plan.model]
        if rt.purpose:
            gen += ["--purpose", rt.purpose]
        corpus = None if rt.corpus == DEFAULT_CORPUS else rt.corpus.resolve()
        if corpus is not None:
            gen += ["--corpus", str(corpus)]
            env["KIT_REDTEAM_CORPUS"] = str(corpus)
        else:
            env["KIT_REDTEAM_CORPUS"] = GENERIC_CORPUS
        if rt.invariants:
            gen += ["--invariants", str(rt.invariants.resolve())]
        tools = find_upwards(Path(plan.cases), "tools.json")
        if tools is not None:
            gen += ["--tools", str(tools.resolve())]
        steps.append(Step("red-team config", tuple(gen)))
        run = ("redteam", "run", "-c", str(config), "--force", "-j", str(settings.concurrency))
        note = f"promptfoo redteam run ({plan.agent.name}: {'your' if corpus else 'generic'} attacks)"
    else:
        run = PROMPTFOO_REDTEAM
        note = "promptfoo redteam run (offline attacks)"
        writes += (("promptfoo", "control"),)
    steps += [
        # Promptfoo exits 100 when some attacks succeed, as they must against the vulnerable
        # control target: the verdict step decides instead.
        # Promptfoo's store hook (providers/store_hook.py) writes this eval's results to out_json: no
        # second Promptfoo start to export them, and never another process's "latest" eval.
        Step(
            "promptfoo redteam run",
            (*_launcher(), *run, "--no-progress-bar"),
            env={**env, "KIT_PROMPTFOO_RESULTS": out_json},
            ok=frozenset({0, 100}),
        ),
        kit_step("ingest", ["promptfoo", out_json, "--store", str(settings.store)]),
        Step("red team verdict", (sys.executable, "-m", "kit_promptfoo.redteam.verdict", out_json)),
    ]
    # Exit 1 is the verdict's: attacks succeeded (or errored) on an agent that must resist them all; a red team
    # that never ran leaves its run out of the store, which fails the stage all the same.
    return Stage(
        "redteam", note, tuple(steps), writes, together=True, judged=frozenset({1}), timeout=settings.stage_timeout
    )


def promptfoo_state_stage(plan: Plan) -> Stage | None:
    """On a fresh state folder (a new CI machine, a fresh clone), Promptfoo's eval and red team, started at
    the same time, race to create its database ("table `datasets` already exists"): one Promptfoo command
    creates it first, alone. None when it exists."""
    if (project_root(plan.settings) / STATE / "promptfoo.db").exists():
        return None
    return Stage(
        "promptfoo-state",
        "Promptfoo's database, created once before its stages run together",
        (Step("promptfoo list evals", (*_launcher(), "list", "evals", "-n", "1")),),
        timeout=min(plan.settings.stage_timeout, 600.0),
    )


def stages(plan: Plan, shards: Path | None = None, out: Path = OUT, *, replay: bool = True) -> list[Stage]:
    """`make evals`' stages. `replay`: DeepEval and the Promptfoo eval judge the kit stage's runs (False when
    the kit stage does not run: they call the agent themselves)."""
    work = out / "promptfoo"
    runs_file = (out / "runs.jsonl").resolve()
    upload = bool(os.environ.get("KIT_DEEPEVAL_UPLOAD"))
    deepeval_env = {
        # DeepEval reads .env and builds its telemetry client at import, before tests/evals loads.
        "DEEPEVAL_DISABLE_DOTENV": "1",
        **DEEPEVAL,
        "CONFIDENT_API_KEY": os.environ.get("CONFIDENT_API_KEY", "") if upload else "",
        **({"KIT_REPLAY_RUNS": str(runs_file)} if replay else {}),
    }
    state = promptfoo_state_stage(plan)
    lint_argv = [str(plan.cases), *(["--invariants", str(plan.invariants)] if plan.invariants else [])]
    return [
        Stage("lint", f"{plan.cases} is valid", (kit_step("lint", lint_argv),), timeout=600.0),
        kit_stage(plan, runs_file, shards),
        *([state] if state is not None else []),
        Stage(
            "deepeval",
            "deepeval test run tests/evals"
            + (f" ({plan.agent.name})" if not plan.reference else "")
            + ", judging the kit stage's runs",
            (Step("deepeval", (_tool("deepeval"), "test", "run", "tests/evals", "-d", "failing"), env=deepeval_env),),
            (("deepeval", "golden"),),
            together=True,
            judged=frozenset({1}),
            timeout=plan.settings.stage_timeout,
        ),
        promptfoo_stage(plan, work, runs_file if replay else None),
        redteam_stage(plan, work),
    ]


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
    """Every stage, in the order given; the `together` ones at the same time, after the others."""
    done: dict[int, StageResult] = {}
    with routing.routed():
        for i, stage in enumerate(chosen):
            if not stage.together:
                done[i] = run_stage(stage, env, logs)
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
    said = f"<== {stage.name}: exit {code} in {seconds:.1f} s (CPU {cpu:.1f} s); log {log}"
    if code == TIMED_OUT:
        said += f"; TIMED OUT after {stage.timeout:g} s"
    _say(said, *(f"    | {line[:200]}" for line in tail))
    return StageResult(stage, code, seconds, log, cpu)


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
    try:
        proc = subprocess.Popen(
            step.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**env, **step.env},
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as e:
        f.write(f"cannot start: {e}\n")
        return 127, 0.0
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
            _kill_group(proc.pid)
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
        _kill_group(proc.pid)
        reader.join(2.0)
    proc.stdout.close()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, used.ru_utime + used.ru_stime


OUTPUT_GRACE = 5.0  # seconds the log is still read after its tool exited


def _kill_group(pgid: int) -> None:
    """End a tool's process group: TERM, a moment to exit, then KILL."""
    for sig, wait in ((signal.SIGTERM, 1.0), (signal.SIGKILL, 0.0)):
        try:
            os.killpg(pgid, sig)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(wait)
