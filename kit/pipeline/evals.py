"""`make evals`: every stage on the golden set into one store, then one summary, an HTML report, JUnit
XML, a comparison with the baseline and the gate's verdict on each run this invocation wrote."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit.commands.gate import case_floors
from kit.errors import KitInputError
from kit.gate.policy import load_policy
from kit.pipeline.stages import OUT, TIMED_OUT, Stage, StageResult, kit_command, run_stages, stages
from kit.pipeline.summary import Collected, collect, summary_text
from kit.plan import Plan, make_plan
from kit.report import junit
from kit.settings import load_settings
from kit.store import Store, new_run_id, open_store
from kit.store import queries as q
from kit.store.api import EVALS_ID_ENV
from kit.store.merge import import_runs

# `make evals VAR=...` hands its variables over in the environment, never through a shell: an agent name
# or a case path with a space or a `;` in it reaches the pipeline as one argument, exactly as typed.
MAKE_VARS = {
    "agent": "KIT_MAKE_AGENT",
    "variant": "KIT_MAKE_VARIANT",
    "cases": "KIT_MAKE_CASES",
    "shards": "KIT_MAKE_SHARDS",
    "baseline_store": "KIT_MAKE_BASELINE_STORE",
    "out": "KIT_MAKE_EVALS_OUT",
    "concurrency": "KIT_MAKE_CONCURRENCY",
    "only": "KIT_MAKE_ONLY",
}


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make evals", description=__doc__)
    parser.add_argument("--agent", help="your agent, module:callable, for every stage (default: the reference agent)")
    parser.add_argument("--variant", help="a fault variant of the reference agent")
    parser.add_argument("--cases", type=Path, help="a case file or folder (default: the settings' cases)")
    parser.add_argument("--only", nargs="*", help="run only these stages")
    parser.add_argument("--shards", type=Path, help="merge these CI shard results instead of running the kit stage")
    parser.add_argument("--baseline-store", type=Path, help="a store from the base branch, to compare against")
    parser.add_argument("--out", type=Path, default=OUT, help="where the summary, reports and logs go (.kit)")
    parser.add_argument("--concurrency", type=int, help="agent calls in flight at once, all stages together")
    parser.add_argument(
        "--from-make", action="store_true", help="take the options from make's KIT_MAKE_* variables (the Makefile)"
    )
    args = parser.parse_args(argv)
    if args.from_make:
        for key, var in MAKE_VARS.items():
            value = os.environ.get(var, "")
            if not value:
                continue
            if key == "only":
                args.only = value.split()
            elif key == "concurrency":
                try:
                    args.concurrency = int(value)
                except ValueError:
                    parser.error(f"CONCURRENCY must be a whole number, got {value!r}")
            else:
                args.__dict__[key] = Path(value) if key in ("cases", "shards", "baseline_store", "out") else value
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    try:
        settings = load_settings({"agent": args.agent, "cases": args.cases, "concurrency": args.concurrency})
        plan = make_plan(settings, variant=args.variant)
        wanted = (*args.only, "promptfoo-state") if args.only else None
        replay = wanted is None or "kit" in wanted  # without the kit stage, nothing was run to judge
        every = stages(plan, args.shards, args.out, replay=replay)
        known = {s.name for s in every} | {"promptfoo-state"}
        unknown = sorted(set(args.only or ()) - known)
        if unknown:
            raise KitInputError(f"no stage {', '.join(unknown)} (stages: {', '.join(sorted(known))})")
    except KitInputError as e:
        print(f"make evals: {e}", file=sys.stderr)
        return 2
    chosen = [s for s in every if wanted is None or s.name in wanted]
    return evaluate(plan, chosen, args.out, baseline_store=args.baseline_store)


def stage_env(plan: Plan, out: Path) -> dict[str, str]:
    """The environment of the tools' own commands: the plan as KIT_* variables (DeepEval's and Promptfoo's
    adapters read them), each tool starting a run of its own under this invocation's evals id, one shared
    cap on the agent's calls in flight, nothing leaving the machine."""
    env = {k: v for k, v in os.environ.items() if k != "KIT_RUN_ID"}
    env.update(plan.env())
    env.pop("KIT_RUN_ID", None)  # one run id for all stages would merge their runs
    env.pop("KIT_REPLAY_RUNS", None)  # only the stages that judge the kit stage's runs get them
    env[EVALS_ID_ENV] = os.environ[EVALS_ID_ENV]
    slots = (out / "slots").resolve()
    slots.mkdir(parents=True, exist_ok=True)
    env["KIT_SLOTS_DIR"] = str(slots)
    env.update(
        {"DEEPEVAL_TELEMETRY_OPT_OUT": "1", "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    )
    # Logs are read by people and grepped: no colour codes (Rich, Node and pytest all honour these).
    env.update({"NO_COLOR": "1", "FORCE_COLOR": "0", "PY_COLORS": "0", "TERM": "dumb"})
    env.pop("CLICOLOR_FORCE", None)
    return env


def evaluate(plan: Plan, chosen: list[Stage], out: Path, *, baseline_store: Path | None = None) -> int:
    """Run the stages, then summarise and gate what they wrote (see `_evaluate`). Every run this invocation
    writes carries its evals id (the in-process kit stage reads it from the environment, which is put back
    afterwards): a report shows these stages and no later ones."""
    before = os.environ.get(EVALS_ID_ENV)
    os.environ[EVALS_ID_ENV] = new_run_id("evals")
    try:
        return _evaluate(plan, chosen, out, baseline_store=baseline_store)
    finally:
        if before is None:
            os.environ.pop(EVALS_ID_ENV, None)
        else:
            os.environ[EVALS_ID_ENV] = before


def _evaluate(plan: Plan, chosen: list[Stage], out: Path, *, baseline_store: Path | None = None) -> int:
    """Run the stages, then summarise and gate what they wrote. 0 when every gated run passes its gate and
    no stage broke (a crash, a time-out, or a run it should have written missing from the store), else 1."""
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (out / "promptfoo").mkdir(parents=True, exist_ok=True)
    store = open_store(plan.store)
    if baseline_store and baseline_store.is_file():
        print(f"==> baseline: {import_runs(store, baseline_store)} runs copied from {baseline_store}")
    with store.connect() as con:
        before = q.run_ids(con)

    env = stage_env(plan, out)
    started = time.perf_counter()
    results = run_stages(chosen, env, logs)
    wall = time.perf_counter() - started

    with store.connect() as con:
        data = collect(con, before)
        suites = [
            junit.SuiteRows(r, q.case_runs(con, r["run_id"]), q.unpassed_checks(con, r["run_id"])) for r in data.runs
        ]
        baselines = {r["run_id"]: q.baseline_run(con, r["run_id"]) for r in data.runs}
    (out / "junit.xml").write_text(junit.render(suites))
    # `latest`, and `kit gate` / `kit report` / `kit compare` without a run, now mean these runs.
    q.last_evals_file(store.path).write_text(
        json.dumps({"gated": [r["run_id"] for r in data.gated], "controls": _controls(data)}, indent=1)
    )
    report = _report(store, data, baselines, out)
    text = summary_text(data, results, str(report) if report else None, wall=wall)
    print(text)
    (out / "summary.txt").write_text(text)
    if report:
        print(f"HTML report: {report}; JUnit XML: {out / 'junit.xml'}; summary: {out / 'summary.txt'}")
    print("\n== gate")
    try:
        policy = load_policy(plan.settings.gates)
        floors, notes = case_floors(Path(plan.cases))
    except KitInputError as e:
        print(f"make evals: {e}", file=sys.stderr)
        return 2
    for n in notes:
        print(f"  note: {n}")
    verdicts = [_gate(store, r, baselines[r["run_id"]], policy, floors) for r in data.gated]
    broken = _broken(results, data)
    for name, why in broken:
        print(f"make evals: stage {name} broke: {why}; see {logs / (name + '.log')}", file=sys.stderr)
    if not data.runs:
        print("make evals: no run reached the store", file=sys.stderr)
    ok = bool(data.runs) and not broken and all(verdicts)
    print("make evals: PASSED" if ok else "make evals: FAILED")
    return 0 if ok else 1


def _controls(data: Collected) -> list[str]:
    return [r["run_id"] for r in data.runs if q.is_control(r)]


def _report(store: Store, data: Collected, baselines: dict[str, str | None], out: Path) -> Path | None:
    """One HTML report of every run this invocation wrote, with the kit's run beside its baseline; the same
    comparison as Markdown for a PR comment."""
    kit_run = next((r["run_id"] for r in reversed(data.runs) if r["source"] == "kit"), None)
    if not kit_run:
        return None
    argv = ["--run", kit_run, "--runs", *(r["run_id"] for r in data.runs), "--html", str(out / "report.html")]
    base = baselines.get(kit_run)
    if base:
        argv += ["--compare", base, kit_run, "--md", str(out / "compare.md")]
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        code = kit_command("report", [*argv, "--store", str(store.path)])()
    return out / "report.html" if code == 0 else None


GATE_LINES = 5  # problems shown per run; `kit gate --run ID` lists them all


def _gate(store: Store, run: dict[str, Any], baseline: str | None, policy: Any, floors: dict[str, float]) -> bool:
    """The gate on one run (kit.commands.gate.gate_run, what `kit gate` prints), in a few lines: a red team's
    hundreds of problems are counted, the first few shown (the summary above has them grouped by check)."""
    from kit.commands.gate import gate_run
    from kit.errors import KitInputError

    who = f" [{run.get('agent') or ''}]" if run.get("agent") else ""
    try:
        result = gate_run(store, run["run_id"], policy, floors, baseline=baseline)
    except (q.RunNotFound, KitInputError) as e:
        print(f"  gate could not judge run {run['run_id']}: {e}{who}")
        return False
    print(f"  {result.headline}{who}")
    for problem in result.problems[:GATE_LINES]:
        print(f"    - {problem[:200]}")
    if len(result.problems) > GATE_LINES:
        print(f"    ... {len(result.problems) - GATE_LINES} more: kit gate --run {run['run_id']}")
    return result.passed


def _broken(results: list[StageResult], data: Collected) -> list[tuple[str, str]]:
    """Stages that broke, each with why: exited with a code that is neither success nor a judged failure
    (a crash, a time-out, bad input), or left out a run it must write (a tool that died, an ingest that
    failed). Either fails the build, whatever the other stages wrote."""
    wrote = {(r["source"], r["kind"]) for r in data.runs}
    out: list[tuple[str, str]] = []
    for r in results:
        missing = [f"{src} {kind}" for src, kind in r.stage.writes if (src, kind) not in wrote]
        if r.broke:
            out.append((r.stage.name, "timed out" if r.code == TIMED_OUT else f"exit {r.code}"))
        elif missing:
            out.append((r.stage.name, f"no {', no '.join(missing)} run reached the store"))
    return out
