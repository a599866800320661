"""Each framework's desk run live through every front end, as a user runs it: `make frameworks-live`
(`FRAMEWORK=smolagents` for one). Run by hand, never by `make test` (minutes per framework, a venv each).

For each framework it makes (or reuses) a venv of its own, `.venv-frameworks/<name>`, with the kit installed
from this checkout and the framework at the versions its recordings name (tests/fixtures/frameworks/
versions.json); sets a team repository up with `kit init` in a temporary folder (the agent the framework's desk
module from tests/unit, the cases tests/fixtures/frameworks/desk.yaml, node_modules linked to the checkout's);
starts the scripted model double on 127.0.0.2; and, for the clean desk and the faulty one (DESK_BUG=1: a refund
without a lookup), runs `kit run`, `deepeval test run tests/evals`, `npx promptfoo eval`, and `kit import` +
`kit check` on a fresh OTLP export of the same desk (tests/frameworks/export.py, the recording's own
instrumentation). The verdicts come from the store the front ends wrote (and `kit check --json`): one table,
framework x desk x check x front end. Exit 1 when a front end disagrees on a check, the clean desk fails a
check or the faulty desk does not fail `guarded` or `order`; exit 2 when a step could not run.

    python tests/frameworks/live.py [--no-install] [--keep DIR] [FRAMEWORK ...]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "tests" / "unit"
FIXTURES = ROOT / "tests" / "fixtures" / "frameworks"
VENVS = ROOT / ".venv-frameworks"
CHECKOUT_VENV = ROOT / ".venv"
FRONT_ENDS = ("kit run", "deepeval", "promptfoo", "import+check")
STORE_SOURCES = {"kit": "kit run", "deepeval": "deepeval", "promptfoo": "promptfoo"}
MUST_FAIL = ("guarded:", "order:")  # the faulty desk's failure names one of these
ERRORED = "(the run's error)"  # a case whose run errored: its checks are not judged


@dataclass(frozen=True)
class Framework:
    """One framework's desk: its module and entry point, the double's script, how its venv is made and the
    recording (record.py's function) its export repeats."""

    agent: str  # module:callable, the module a file of tests/unit
    script: str  # module:function of the model double's script
    pins: str | None  # the versions.json entry its venv installs; None: the checkout's venv
    export: str  # record.py's function for the export
    extras: str = ""
    server: str = "openai"
    extra_exports: tuple[tuple[str, str], ...] = ()  # (record.py function, label): exports judged apart
    # The team's module imports this at its top, as a module does (the desks of tests/unit import their
    # framework inside the call): smolagents and CrewAI load the project's .env at import, the closed-port proxy
    # of kit init's .env among it, so imported during a call they send that call's model requests to it.
    preload: str | None = None
    packages: tuple[str, ...] = field(default=())  # more than versions.json names (unpinned)


FRAMEWORKS: dict[str, Framework] = {
    "smolagents": Framework(
        "_smolagents_desk:full_steps",
        "_smolagents_desk:desk_model",
        "smolagents",
        "smolagents",
        extras="smolagents",
        preload="smolagents",
    ),
    "strands": Framework("_strands_desk:messages", "_triage_desk:desk_model", "strands", "strands"),
    # ADK's default export carries no arguments (content capture off): judged apart, its `arg` check failing.
    "adk": Framework(
        "_adk_desk:events", "_triage_desk:desk_model", "adk", "adk_content", extra_exports=(("adk", "capture off"),)
    ),
    "llamaindex": Framework("_llamaindex_desk:events", "_triage_desk:desk_model", "llamaindex", "llamaindex"),
    "crewai": Framework("_crewai_desk:crew_output", "_triage_desk:desk_model", "crewai", "crewai", preload="crewai"),
    "anthropic": Framework(
        "_anthropic_desk:messages", "test_frameworks_anthropic:desk_model", None, "anthropic", server="anthropic"
    ),
    "agents_triage": Framework("_triage_desk:agents_triage", "_triage_desk:desk_model", None, "agents_triage"),
    "langgraph_triage": Framework("_triage_desk:langgraph_triage", "_triage_desk:desk_model", None, "langgraph_triage"),
    "agent_framework": Framework("_agent_framework_desk:response", "_triage_desk:desk_model", None, "agent_framework"),
    # The Claude Code CLI's own export: its traces and log events, given together (record.py keeps them).
    "claude_agent": Framework(
        "_claude_agent_desk:messages", "_claude_agent_desk:desk_model", None, "claude_agent", server="anthropic"
    ),
}


class StepFailed(Exception):
    """A step that could not run (an install, kit init, a tool that crashed rather than judged)."""


# --- venvs -------------------------------------------------------------------------------------------------


def _pip_args(fw: Framework) -> list[str]:
    pins = json.loads((FIXTURES / "versions.json").read_text())[fw.pins or ""]
    kit = f"-e {ROOT}[{fw.extras}]" if fw.extras else f"-e {ROOT}"
    wanted = [f"{name}=={ver}" for name, ver in sorted(pins.items())]
    sdk = pins.get("opentelemetry-sdk")
    # The export is encoded as record.py encodes it (OTLP protobuf's JSON): the exporter's common module.
    wanted.append(
        f"opentelemetry-exporter-otlp-proto-common=={sdk}" if sdk else "opentelemetry-exporter-otlp-proto-common"
    )
    return [*kit.split(), *wanted, *fw.packages]


def venv_for(name: str, fw: Framework, *, install: bool, log: Path) -> tuple[Path, dict[str, str]]:
    """The framework's venv (made and installed when missing or its pins changed) and what its processes add
    to the environment."""
    if fw.pins is None:
        extra = {"PYTHONPATH": str(CHECKOUT_VENV / "anthropic-sdk")} if fw.server == "anthropic" else {}
        return CHECKOUT_VENV, extra  # the Anthropic SDK lies where make puts it, beside the checkout's venv
    venv = VENVS / name
    args = _pip_args(fw)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # Made again when the pins or the kit's own requirements (its extra's among them) change.
    needs = [*args, *project["dependencies"], *project["optional-dependencies"].get(fw.extras, [])]
    stamp_text = hashlib.sha256("\n".join(needs).encode()).hexdigest()
    stamp = venv / ".kit-live-installed"
    if stamp.exists() and stamp.read_text() == stamp_text:
        return venv, {}
    if not install:
        raise StepFailed(f"{venv} is missing or out of date, and --no-install was given")
    env = {**_base_env(), "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", "/tmp/pip-cache-frameworks")}
    started = time.monotonic()
    print(f"{name}: installing {venv} ({' '.join(args)})", flush=True)
    _sh([sys._base_executable, "-m", "venv", "--clear", str(venv)], ROOT, env, log, timeout=300)
    _sh([str(venv / "bin" / "pip"), "install", "--quiet", *args], ROOT, env, log, timeout=3600)
    stamp.write_text(stamp_text)
    print(f"{name}: installed in {time.monotonic() - started:.0f} s", flush=True)
    return venv, {}


# --- processes ---------------------------------------------------------------------------------------------


def _base_env() -> dict[str, str]:
    """The environment a user's shell would have: none of the kit's own settings or an activated venv, and
    not the closed-port proxy the checkout's .env gives Promptfoo."""
    drop = ("KIT_", "VIRTUAL_ENV", "PYTHONPATH", "DESK_", "PYTEST_")
    return {k: v for k, v in os.environ.items() if not k.startswith(drop) and v != "http://127.0.0.1:9"}


def _sh(
    cmd: list[str], cwd: Path, env: dict[str, str], log: Path, *, timeout: float, ok: tuple[int, ...] = (0,)
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    with log.open("a") as out:
        out.write(f"\n$ {' '.join(cmd)}  (in {cwd}, exit {done.returncode})\n{done.stdout}\n{done.stderr}\n")
    if done.returncode not in ok:
        raise StepFailed(f"{' '.join(cmd[:4])} exited {done.returncode}: {(done.stderr or done.stdout)[-600:]}")
    return done


def _double(fw: Framework) -> Any:
    sys.path[:0] = [str(UNIT)]
    module, func = fw.script.split(":")
    script = getattr(__import__(module), func)
    if fw.server == "anthropic":
        from kit.doubles.anthropic_server import ScriptedAnthropicServer

        return ScriptedAnthropicServer(script, host="127.0.0.2")
    from kit.doubles.openai_server import ScriptedOpenAIServer

    return ScriptedOpenAIServer(script, host="127.0.0.2")


# --- one desk through every front end ----------------------------------------------------------------------


def _repo(where: Path, fw: Framework, venv: Path, env: dict[str, str], log: Path) -> Path:
    """A team's repository as `kit init` makes it: the desk module, the cases, the venv and node packages."""
    repo = where / "repo"
    (repo / "evals").mkdir(parents=True)
    module = fw.agent.split(":")[0]
    for name in {module, "_desk_frameworks"}:
        shutil.copy(UNIT / f"{name}.py", repo / f"{name}.py")
    shutil.copy(FIXTURES / "desk.yaml", repo / "evals" / "cases.yaml")
    (repo / ".venv").symlink_to(venv)
    agent = fw.agent
    if fw.preload:
        func = fw.agent.split(":")[1]
        (repo / "desk.py").write_text(
            f'"""The team\'s agent: the desk, its framework imported at the top."""\n\n'
            f"import {fw.preload}  # noqa: F401\n\nfrom {module} import {func}  # noqa: F401\n"
        )
        agent = f"desk:{func}"
    kit = str(venv / "bin" / "kit")
    _sh([kit, "init", "--agent", agent, "--cases", "evals/cases.yaml"], repo, env, log, timeout=120)
    # What the npm install make evals runs would leave: the checkout's pinned Promptfoo, linked.
    (repo / "node_modules").mkdir()
    for entry in (ROOT / "node_modules").iterdir():
        if not entry.name.startswith(".installed"):
            (repo / "node_modules" / entry.name).symlink_to(entry)
    (repo / "node_modules" / ".kit-installed").touch()
    return repo


def _store_verdicts(repo: Path, env: dict[str, str], log: Path) -> dict[str, dict[str, tuple[str, str]]]:
    """Each front end's checks from the repository's store: {front end: {check: (outcome, reason)}}."""
    query = (
        "import json\n"
        "from kit.store import open_store\n"
        "with open_store('.kit/evals.duckdb').connect() as con:\n"
        "    rows = con.execute('SELECT r.source, c.\"check\", c.outcome, c.reason FROM check_results c '\n"
        "                       'JOIN runs r USING (run_id) ORDER BY r.started_at').fetchall()\n"
        "    errors = con.execute('SELECT r.source, c.error FROM case_results c JOIN runs r USING (run_id) '\n"
        "                         'WHERE c.error IS NOT NULL').fetchall()\n"
        "print(json.dumps([rows, errors]))\n"
    )
    done = _sh([str(repo / ".venv" / "bin" / "python"), "-c", query], repo, env, log, timeout=120)
    rows, errors = json.loads(done.stdout.strip().splitlines()[-1])
    verdicts: dict[str, dict[str, tuple[str, str]]] = {}
    for source, check, outcome, reason in rows:
        if outcome == "skipped":  # a rubric with no judge configured: kit init's example, not a check here
            continue
        verdicts.setdefault(STORE_SOURCES.get(source, source), {})[check] = (outcome, reason or "")
    for source, error in errors:
        verdicts.setdefault(STORE_SOURCES.get(source, source), {})[ERRORED] = ("error", error)
    return verdicts


def _import_check(repo: Path, env: dict[str, str], log: Path, export: Path) -> tuple[dict[str, tuple[str, str]], str]:
    kit = str(repo / ".venv" / "bin" / "kit")
    trace = export.with_suffix(".trace.json")
    imported = _sh([kit, "import", "--case-id", "refund", str(export), "-o", str(trace)], repo, env, log, timeout=120)
    checked = _sh(
        [kit, "check", "--cases", "evals/cases.yaml", "--json", str(trace)], repo, env, log, timeout=120, ok=(0, 1)
    )
    [result] = json.loads(checked.stdout)["results"]
    warning = " ".join(line for line in imported.stderr.splitlines() if "warning:" in line or "note:" in line)
    return {c["check"]: (c["outcome"], c["reason"] or "") for c in result["checks"]}, warning


@dataclass
class DeskRun:
    verdicts: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)  # front end -> check -> ...
    calls: dict[str, int] = field(default_factory=dict)  # front end -> model calls the double answered
    seconds: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def run_desk(name: str, fw: Framework, venv: Path, extra_env: dict[str, str], bug: bool, where: Path) -> DeskRun:
    log = where / "log.txt"
    where.mkdir(parents=True)
    out = DeskRun()
    with _double(fw) as double:
        env = {**_base_env(), **extra_env, "DESK_MODEL_URL": double.base_url, "DESK_BUG": "1" if bug else "0"}
        repo = _repo(where, fw, venv, env, log)
        bin_ = repo / ".venv" / "bin"
        steps = {
            "kit run": [str(bin_ / "kit"), "run", "-q"],
            "deepeval": [str(bin_ / "deepeval"), "test", "run", "tests/evals"],
            "promptfoo": ["npx", "--no-install", "promptfoo", "eval", "--no-progress-bar"],
        }
        for front, cmd in steps.items():
            before, started = len(double.requests), time.monotonic()
            # exit 1 (or promptfoo's 100) is a judged failure; the store says which checks
            _sh(cmd, repo, env, log, timeout=900, ok=(0, 1, 100))
            out.seconds[front], out.calls[front] = time.monotonic() - started, len(double.requests) - before
        out.verdicts.update(_store_verdicts(repo, env, log))
        for export_name, label in ((fw.export, ""), *fw.extra_exports):
            front = f"import+check ({label})" if label else "import+check"
            before, started = len(double.requests), time.monotonic()
            export = where / f"otel-{export_name}.json"
            script = str(ROOT / "tests" / "frameworks" / "export.py")
            preload = [fw.preload] if fw.preload else []
            _sh([str(bin_ / "python"), script, export_name, str(export), *preload], repo, env, log, timeout=600)
            out.verdicts[front], warning = _import_check(repo, env, log, export)
            out.seconds[front], out.calls[front] = time.monotonic() - started, len(double.requests) - before
            if warning:
                out.notes.append(f"{front}: {warning}")
    return out


# --- the verdict -------------------------------------------------------------------------------------------


def judge(name: str, bug: bool, run: DeskRun) -> list[str]:
    """What is wrong with one desk's run: a front end with no verdict or whose run errored (said once, with
    the error), a check the others disagree on, a clean desk failing, a faulty desk passing."""
    desk = f"{name} {'faulty' if bug else 'clean'}"
    problems = [f"{desk}: no verdicts from {front}" for front in FRONT_ENDS if front not in run.verdicts]
    errored = {f: v[ERRORED][1] for f, v in run.verdicts.items() if f in FRONT_ENDS and ERRORED in v}
    problems += [f"{desk}: {front}: the run errored: {reason[:300]}" for front, reason in errored.items()]
    judged = [f for f in FRONT_ENDS if f in run.verdicts and f not in errored]
    for check in sorted({c for f in judged for c in run.verdicts[f]}):
        seen = {f: run.verdicts[f].get(check, ("missing", ""))[0] for f in judged}
        if len(set(seen.values())) > 1:
            problems.append(f"{desk}: {check} disagrees: {seen}")
    for front in judged:
        failed = [c for c, (outcome, _) in run.verdicts[front].items() if outcome != "pass"]
        if not bug and failed:
            problems.append(f"{desk}: {front} fails {failed}")
        if bug and not any(c.startswith(MUST_FAIL) for c in failed):
            problems.append(f"{desk}: {front} fails neither guarded nor order ({failed or 'nothing'})")
    return problems


def print_tables(results: dict[str, dict[bool, DeskRun]], walls: dict[str, float]) -> None:
    short = {"pass": "pass", "fail": "FAIL", "error": "ERR", "missing": "-"}
    print("\n== per check (clean desk | faulty desk)")
    fronts_all: list[str] = []
    for runs in results.values():
        for run in runs.values():
            fronts_all += [f for f in run.verdicts if f not in fronts_all]
    header = ["framework", "check", *fronts_all]
    rows = []
    for name, runs in results.items():
        checks = sorted({c for run in runs.values() for v in run.verdicts.values() for c in v})
        for check in checks:
            cells = []
            for front in fronts_all:
                pair = [
                    short.get(runs[b].verdicts.get(front, {}).get(check, ("missing", ""))[0], "?")
                    for b in (False, True)
                    if b in runs
                ]
                cells.append(" | ".join(pair))
            rows.append([name, check, *cells])
    _table(header, rows)
    print("\n== per front end: failing checks (clean desk; faulty desk), model calls, seconds")
    rows = []
    for name, runs in results.items():
        for front in [f for f in fronts_all if any(f in run.verdicts for run in runs.values())]:
            cells = []
            for bug in (False, True):
                run = runs.get(bug)
                if run is None or front not in run.verdicts:
                    cells += ["-", "-", "-"]
                    continue
                failed = [c.split(":")[0] for c, (o, _) in run.verdicts[front].items() if o != "pass"]
                cells += [
                    ",".join(failed) or "pass",
                    str(run.calls.get(front, "-")),
                    f"{run.seconds.get(front, 0):.0f}",
                ]
            rows.append([name, front, *cells])
    _table(["framework", "front end", "clean", "calls", "s", "faulty", "calls", "s"], rows)
    print("\n" + "  ".join(f"{name}: {wall:.0f} s" for name, wall in walls.items()), "(wall time per framework)")
    for name, runs in results.items():
        for bug, run in runs.items():
            for note in run.notes:
                print(f"note: {name} {'faulty' if bug else 'clean'}: {note}")
            for front, checks in run.verdicts.items():
                for check, (outcome, reason) in checks.items():
                    if outcome != "pass":
                        print(f"  {name} {'faulty' if bug else 'clean'} {front} {check}: {outcome}: {reason[:160]}")


def _table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, ["-" * w for w in widths], *rows]:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("frameworks", nargs="*", help=f"default: all ({', '.join(FRAMEWORKS)})")
    parser.add_argument("--no-install", action="store_true", help="use the venvs as they are (offline)")
    parser.add_argument("--keep", type=Path, help="keep the repositories and logs in this folder")
    args = parser.parse_args(argv)
    unknown = [n for n in args.frameworks if n not in FRAMEWORKS]
    if unknown:
        parser.error(f"no framework {', '.join(unknown)} (known: {', '.join(FRAMEWORKS)})")
    if not (ROOT / "node_modules" / ".bin" / "promptfoo").exists():
        parser.error("no Promptfoo in the checkout's node_modules: run `make packages` first")
    names = args.frameworks or list(FRAMEWORKS)
    work = args.keep or Path(tempfile.mkdtemp(prefix="frameworks-live-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[bool, DeskRun]] = {}
    walls: dict[str, float] = {}
    problems: list[str] = []
    broken = False
    for name in names:
        fw = FRAMEWORKS[name]
        started = time.monotonic()
        try:
            (work / name).mkdir(exist_ok=True)
            venv, extra_env = venv_for(name, fw, install=not args.no_install, log=work / name / "install.txt")
            results[name] = {}
            for bug in (False, True):
                desk = "faulty" if bug else "clean"
                print(f"{name}: {desk} desk ...", flush=True)
                results[name][bug] = run_desk(name, fw, venv, extra_env, bug, work / name / desk)
                problems += judge(name, bug, results[name][bug])
        except (StepFailed, subprocess.TimeoutExpired) as exc:
            broken = True
            problems.append(f"{name}: could not run: {exc}")
        walls[name] = time.monotonic() - started
    print_tables(results, walls)
    print(f"\nrepositories and logs: {work}")
    for problem in problems:
        print(f"PROBLEM {problem}")
    print("frameworks-live:", "BROKEN" if broken else ("FAILED" if problems else "PASSED"))
    if not args.keep and not problems:
        shutil.rmtree(work, ignore_errors=True)
    return 2 if broken else (1 if problems else 0)


if __name__ == "__main__":
    sys.exit(main())
