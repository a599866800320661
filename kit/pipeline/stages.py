"""The stages of `make evals`, and how they run.

A stage is a few steps. A step is either a kit function called in this process (lint, the kit's runner,
ingest) or a tool's own command (`deepeval test run`, the Promptfoo launcher), never `make` or `kit`
again. Every step's output goes to the stage's log; a stage that fails is reported and the others still
run, so one broken tool never hides the others' results.

The tools' stages (DeepEval, Promptfoo eval, the red team) run at the same time, after lint and the kit's
runner: each is mostly one tool process waiting on its own workers, so together they fill the cores that
each alone leaves idle. The kit's runner runs alone because it forks its workers, which is unsafe while
other threads run.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import resource
import shlex
import shutil
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from kit.case import find_upwards
from kit.pipeline import routing
from kit.settings import Settings

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
    source: str | None = None  # the store source its results land under (None: it writes none)
    together: bool = False  # runs at the same time as the other `together` stages (no forking in process)


@dataclass(frozen=True)
class StageResult:
    stage: Stage
    code: int
    seconds: float
    log: Path
    cpu: float | None = None  # CPU seconds of the stage's steps and every process they waited for


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


def kit_stage(settings: Settings, shards: Path | None = None) -> Stage:
    """The kit's runner on the settings' agent (or variant of the reference agent), or the merge of CI shards."""
    store = ["--store", str(settings.store)]
    if shards is not None and shards.is_dir() and any(shards.iterdir()):
        argv = ["-q", "--merge", *sorted(str(p) for p in shards.iterdir()), *store]
        return Stage("kit", "the kit's runner (merged from CI shards)", (kit_step("run", argv),), "kit")
    argv = ["-q", "--cases", str(settings.cases), *store, "--timeout", str(settings.agent_timeout)]
    if settings.invariants:
        argv += ["--invariants", str(settings.invariants)]
    if settings.agent:
        argv += ["--agent", settings.agent]
        note = f"the kit's runner on {settings.agent}"
    else:
        argv += ["--policy", settings.agent_policy]
        argv += ["--variant", settings.variant] if settings.variant else []
        note = "the kit's runner on the reference agent" + (
            f" (variant {settings.variant})" if settings.variant else ""
        )
    return Stage("kit", note, (kit_step("run", argv),), "kit")


OUT = Path(".kit")  # where the summary, reports and logs go; Promptfoo's configs and results under promptfoo/
DEFAULT_CORPUS = Path("redteam/attacks.yaml")  # the reference agent's shop attacks (the settings' default)


def own_promptfoo_config(settings: Settings) -> bool:
    """Another agent, or cases other than golden/, get a generated Promptfoo config: the committed
    promptfooconfig.yaml is the reference agent on golden/ and stays untouched."""
    return settings.agent is not None or Path(settings.cases).resolve() != Path("golden").resolve()


def promptfoo_stage(settings: Settings, work: Path) -> Stage:
    """`work`: this invocation's folder for generated configs and results (concurrent runs never share one)."""
    store = ["--store", str(settings.store)]
    launcher = (sys.executable, "-m", "kit_promptfoo.run_promptfoo")
    out_json = str((work / "golden.json").resolve())
    if own_promptfoo_config(settings):
        config = (work / "promptfooconfig.yaml").resolve()
        gen = [sys.executable, "-m", "kit_promptfoo.genconfig", "--golden", str(Path(settings.cases).resolve())]
        gen += ["--out", str(config)]
        if settings.agent:
            gen += ["--agent", settings.agent] + (["--model", settings.agent_model] if settings.agent_model else [])
        first = Step("genconfig", tuple(gen))
        who = settings.agent or "the reference agent"
        note = f"promptfoo eval ({who} on {settings.cases}; config {work / 'promptfooconfig.yaml'})"
        eval_argv = ("eval", "-c", str(config), "--no-progress-bar", "--no-table", "-o", out_json)
    else:
        first = Step("genconfig", (sys.executable, "-m", "kit_promptfoo.genconfig", "--check"))
        note = "promptfoo eval (golden cases)"
        eval_argv = (*PROMPTFOO_EVAL, out_json)
    return Stage(
        "promptfoo",
        note,
        (
            first,
            Step("promptfoo eval", (*launcher, *eval_argv)),
            # The results go to the store whether or not the eval passed.
            # Promptfoo's store hook has stored this eval already: ingesting its file again is skipped by its
            # eval id (not --force, which would store it twice); it still stores an eval the hook could not.
            kit_step("ingest", ["promptfoo", out_json, *store], always=True),
        ),
        "promptfoo",
        together=True,
    )


def redteam_stage(settings: Settings, work: Path) -> Stage:
    """The red team of the settings' agent. The reference agent runs the committed configuration, with its
    deliberately vulnerable control target; another agent gets one generated for it (no control target:
    that belongs to the reference agent), from the user's purpose, corpus and invariants where given."""
    store = ["--store", str(settings.store)]
    launcher = (sys.executable, "-m", "kit_promptfoo.run_promptfoo")
    out_json = str((work / "redteam.json").resolve())
    steps: list[Step] = []
    env: dict[str, str] = {}
    if settings.agent:
        rt = settings.redteam
        config = (work / "redteam" / "promptfooconfig.yaml").resolve()
        gen = [sys.executable, "-m", "kit_promptfoo.redteam.config", "--agent", settings.agent, "--out", str(config)]
        if settings.agent_model:
            gen += ["--model", settings.agent_model]
        if rt.purpose:
            gen += ["--purpose", rt.purpose]
        corpus = None if rt.corpus == DEFAULT_CORPUS else rt.corpus.resolve()
        if corpus is not None:
            gen += ["--corpus", str(corpus)]
            env["KIT_REDTEAM_CORPUS"] = str(corpus)
        else:
            env["KIT_REDTEAM_CORPUS"] = str(Path("redteam/generic/attacks.yaml").resolve())
        if rt.invariants:
            gen += ["--invariants", str(rt.invariants.resolve())]
        tools = find_upwards(Path(settings.cases), "tools.json")
        if tools is not None:
            gen += ["--tools", str(tools.resolve())]
        steps.append(Step("red-team config", tuple(gen)))
        run = ("redteam", "run", "-c", str(config), "--force")
        note = f"promptfoo redteam run ({settings.agent}: {'your' if corpus else 'generic'} attacks)"
    else:
        run = PROMPTFOO_REDTEAM
        note = "promptfoo redteam run (offline attacks)"
    steps += [
        # Promptfoo exits 100 when some attacks succeed, as they must against the vulnerable
        # control target: the verdict step decides instead.
        # Promptfoo's store hook (providers/store_hook.py) writes this eval's results to out_json: no
        # second Promptfoo start to export them, and never another process's "latest" eval.
        Step(
            "promptfoo redteam run",
            (*launcher, *run, "--no-progress-bar"),
            env={**env, "KIT_PROMPTFOO_RESULTS": out_json},
            ok=frozenset({0, 100}),
        ),
        kit_step("ingest", ["promptfoo", out_json, *store]),
        Step("red team verdict", (sys.executable, "-m", "kit_promptfoo.redteam.verdict", out_json)),
    ]
    return Stage("redteam", note, tuple(steps), "promptfoo", together=True)


def stages(settings: Settings, shards: Path | None = None, out: Path = OUT) -> list[Stage]:
    work = out / "promptfoo"
    upload = bool(os.environ.get("KIT_DEEPEVAL_UPLOAD"))
    deepeval_env = {
        # DeepEval reads .env and builds its telemetry client at import, before tests/evals loads.
        "DEEPEVAL_DISABLE_DOTENV": "1",
        "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
        "CONFIDENT_API_KEY": os.environ.get("CONFIDENT_API_KEY", "") if upload else "",
    }
    return [
        Stage("lint", f"{settings.cases} is valid", (kit_step("lint", [str(settings.cases)]),)),
        kit_stage(settings, shards),
        Stage(
            "deepeval",
            "deepeval test run tests/evals" + (f" ({settings.agent})" if settings.agent else ""),
            (Step("deepeval", (_tool("deepeval"), "test", "run", "tests/evals", "-d", "failing"), env=deepeval_env),),
            "deepeval",
            together=True,
        ),
        promptfoo_stage(settings, work),
        redteam_stage(settings, work),
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
    """Run the stage's steps in order into logs/<name>.log; its code is the first failing step's."""
    log = logs / f"{stage.name}.log"
    _say(f"==> {stage.name}: {stage.note}")
    started = time.perf_counter()
    # CPU: this thread's own, plus its tools' (each reaped with its rusage). A stage that runs alone
    # takes every reaped child instead, which also counts the workers a kit step forks.
    own, children = time.thread_time(), _children_cpu()
    tools = 0.0
    code = 0
    with log.open("w") as f:
        for step in stage.steps:
            if code != 0 and not step.always:
                continue
            got, used = _run_step(stage.name, step, env, f, started)
            tools += used
            if got not in step.ok and code == 0:
                code = got
                f.write(f"(step {step.label!r} exited {got})\n")
    seconds = time.perf_counter() - started
    cpu = time.thread_time() - own + (tools if stage.together else _children_cpu() - children)
    tail = error_tail(log.read_text(errors="replace")) if code != 0 else []
    said = f"<== {stage.name}: exit {code} in {seconds:.1f} s (CPU {cpu:.1f} s); log {log}"
    _say(said, *(f"    | {line[:200]}" for line in tail))
    return StageResult(stage, code, seconds, log, cpu)


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run_step(name: str, step: Step, env: Mapping[str, str], f: TextIO, started: float) -> tuple[int, float]:
    """The step's exit code, and the CPU seconds of the processes it started (an in-process step: none)."""
    if step.call is not None:
        return _call(step, f), 0.0
    return _command(name, step, env, f, started)


def _call(step: Step, f: TextIO) -> int:
    """A kit function in this process, its output in the stage's log."""
    assert step.call is not None
    f.write(f"$ {step.label}  (in process)\n")
    f.flush()
    with routing.to(f):
        try:
            return step.call()
        except SystemExit as e:
            return e.code if isinstance(e.code, int) else 1
        except Exception:  # a crash in one stage must not take the others down
            traceback.print_exc(file=f)
            return 1
        finally:
            sys.stdout.flush()


def _command(name: str, step: Step, env: Mapping[str, str], f: TextIO, started: float) -> tuple[int, float]:
    """A tool's own command, its output streamed to the stage's log; (exit code, CPU of it and its children)."""
    f.write(f"$ {shlex.join(step.argv)}\n")
    f.flush()
    try:
        proc = subprocess.Popen(
            step.argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**env, **step.env},
            stdin=subprocess.DEVNULL,
        )
    except OSError as e:
        f.write(f"cannot start: {e}\n")
        return 127, 0.0
    assert proc.stdout is not None
    last = [""]
    lines = [0]

    def pump() -> None:
        # Colour codes and carriage-return progress bars are stripped: the log is plain text.
        for raw in iter(proc.stdout.readline, b""):  # type: ignore[union-attr]
            text = ANSI.sub("", raw.decode("utf-8", errors="replace"))
            f.write(text if text.endswith("\n") else text + "\n")
            lines[0] += 1
            if text.strip():
                last[0] = text.strip()
        f.flush()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    while True:
        reader.join(PROGRESS_EVERY)
        if not reader.is_alive():
            break
        # Long work shows it is alive: elapsed time, lines logged, the latest of them.
        elapsed = time.perf_counter() - started
        what = name if step.label == name else f"{name}: {step.label}"
        _say(f"    ... {what}: {elapsed:.0f} s, {lines[0]} log lines; {last[0][:100]}")
    _, status, used = os.wait4(proc.pid, 0)  # as proc.wait(), with the CPU it and its children used
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, used.ru_utime + used.ru_stime
