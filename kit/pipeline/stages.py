"""The stages of `make evals`, and how one runs.

A stage is a few steps. A step is either a kit function called in this process (lint, the kit's runner,
ingest) or a tool's own command (`deepeval test run`, the Promptfoo launcher), never `make` or `kit`
again. Every step's output goes to the stage's log; a stage that fails is reported and the next still
runs, so one broken tool never hides the others' results.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import shlex
import shutil
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from kit.settings import Settings

PROMPTFOO_OUT = Path(".promptfoo/out")
PROMPTFOO_EVAL = ("eval", "-c", "promptfooconfig.yaml", "--no-progress-bar", "--no-table", "-o")
PROMPTFOO_REDTEAM = ("redteam", "run", "-c", "redteam/promptfooconfig.yaml", "-o", "redteam/redteam.yaml", "--force")


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


@dataclass(frozen=True)
class StageResult:
    stage: Stage
    code: int
    seconds: float
    log: Path


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


def stages(settings: Settings, shards: Path | None = None) -> list[Stage]:
    store = ["--store", str(settings.store)]
    launcher = (sys.executable, "-m", "kit_promptfoo.run_promptfoo")
    golden_json = str(PROMPTFOO_OUT / "golden.json")
    redteam_json = str(PROMPTFOO_OUT / "redteam.json")
    upload = bool(os.environ.get("KIT_DEEPEVAL_UPLOAD"))
    deepeval_env = {
        # DeepEval reads .env and builds its telemetry client at import, before tests/evals loads.
        "DEEPEVAL_DISABLE_DOTENV": "1",
        "DEEPEVAL_TELEMETRY_OPT_OUT": "1",
        "CONFIDENT_API_KEY": os.environ.get("CONFIDENT_API_KEY", "") if upload else "",
    }
    return [
        Stage("lint", "golden cases are valid", (kit_step("lint", [str(settings.cases)]),)),
        kit_stage(settings, shards),
        Stage(
            "deepeval",
            "deepeval test run tests/evals",
            (Step("deepeval", (_tool("deepeval"), "test", "run", "tests/evals", "-d", "failing"), env=deepeval_env),),
            "deepeval",
        ),
        Stage(
            "promptfoo",
            "promptfoo eval (golden cases)",
            (
                Step("genconfig", (sys.executable, "-m", "kit_promptfoo.genconfig", "--check")),
                Step(
                    "promptfoo eval",
                    (*launcher, *PROMPTFOO_EVAL, golden_json),
                ),
                # The results go to the store whether or not the eval passed.
                kit_step("ingest", ["promptfoo", "--force", golden_json, *store], always=True),
            ),
            "promptfoo",
        ),
        Stage(
            "redteam",
            "promptfoo redteam run (offline attacks)",
            (
                # Promptfoo exits 100 when some attacks succeed, as they must against the vulnerable
                # control target: the verdict step decides instead.
                Step(
                    "promptfoo redteam run",
                    (*launcher, *PROMPTFOO_REDTEAM, "--no-progress-bar"),
                    ok=frozenset({0, 100}),
                ),
                Step("promptfoo export", (*launcher, "export", "eval", "latest", "-o", redteam_json)),
                kit_step("ingest", ["promptfoo", "--force", redteam_json, *store]),
                Step("red team verdict", (sys.executable, "-m", "kit_promptfoo.redteam.verdict", redteam_json)),
            ),
            "promptfoo",
        ),
    ]


def run_stage(stage: Stage, env: Mapping[str, str], logs: Path) -> StageResult:
    """Run the stage's steps in order into logs/<name>.log; its code is the first failing step's."""
    log = logs / f"{stage.name}.log"
    print(f"==> {stage.name}: {stage.note}", flush=True)
    started = time.perf_counter()
    code = 0
    with log.open("w") as f:
        for step in stage.steps:
            if code != 0 and not step.always:
                continue
            got = _run_step(step, env, f)
            if got not in step.ok and code == 0:
                code = got
    seconds = time.perf_counter() - started
    print(f"    exit {code} in {seconds:.1f} s; log {log}")
    if code != 0:
        for line in log.read_text(errors="replace").strip().splitlines()[-4:]:
            print(f"    | {line[:160]}")
    return StageResult(stage, code, seconds, log)


def _run_step(step: Step, env: Mapping[str, str], f: TextIO) -> int:
    if step.call is not None:
        f.write(f"$ {step.label}  (in process)\n")
        f.flush()
        with contextlib.redirect_stdout(f), contextlib.redirect_stderr(f):
            try:
                return step.call()
            except SystemExit as e:
                return e.code if isinstance(e.code, int) else 1
            except Exception:  # a crash in one stage must not take the others down
                traceback.print_exc(file=f)
                return 1
            finally:
                sys.stdout.flush()
    f.write(f"$ {shlex.join(step.argv)}\n")
    f.flush()
    try:
        return subprocess.run(
            step.argv,
            stdout=f,
            stderr=subprocess.STDOUT,
            env={**env, **step.env},
            stdin=subprocess.DEVNULL,
            check=False,
        ).returncode
    except OSError as e:
        f.write(f"cannot start: {e}\n")
        return 127
