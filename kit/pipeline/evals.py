"""`make evals`: every stage on the golden set into one store, then one summary, an HTML report, JUnit
XML, a comparison with the baseline and the gate's verdict on each run this invocation wrote."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kit.commands.gate import case_floors
from kit.errors import KitInputError
from kit.gate.policy import load_policy
from kit.pipeline.executor import TIMED_OUT, Stage, StageResult, run_stages
from kit.pipeline.stages import OUT, shard_parts, stages
from kit.pipeline.summary import Collected, collect, missing_runs, summary_text
from kit.plan import Plan, child_env, make_plan
from kit.report import junit
from kit.settings import MAKE_VARS, load_settings, make_variables, typed_make_variables
from kit.store import Store, new_run_id, open_store
from kit.store import queries as q
from kit.store.merge import import_runs


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
    ignored = [] if args.from_make else typed_make_variables()
    if ignored:
        typed = ", ".join(ignored)
        parser.error(
            f"{typed} typed on make's command line, but this Makefile's `evals` target does not hand "
            f"{'it' if len(ignored) == 1 else 'them'} to the kit (an older `kit init` wrote it): give the target "
            "`python -m kit.pipeline --from-make` and the KIT_MAKE_* exports `kit init --check` shows, "
            "or set the value in [tool.kit]"
        )
    # How each setting is named in an error: as the user gave it (a make variable, or the option).
    args.names = {key: "--" + key.replace("_", "-") for key in MAKE_VARS}
    if args.from_make:
        for key, value in make_variables().items():
            args.names[key] = MAKE_VARS[key].removeprefix("KIT_MAKE_")
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
        names = args.names
        out = checked_out(args.out, names["out"])
        if args.shards is not None:
            shard_parts(args.shards, names["shards"])
        baseline = checked_baseline(args.baseline_store, names["baseline_store"])
        settings = load_settings({"agent": args.agent, "cases": args.cases, "concurrency": args.concurrency})
        # This invocation's id, on every run its stages write: a report shows these stages and no later ones;
        # one shared cap on the agent's calls in flight, across every stage's processes (kit.runner.slots).
        plan = make_plan(settings, variant=args.variant).derive(evals_id=new_run_id("evals"), slots_dir=slots_in(out))
        # Lint always runs, first: a case file with a typo stops the build before any agent call.
        wanted = (*args.only, "lint") if args.only else None
        replay = wanted is None or "kit" in wanted  # without the kit stage, nothing was run to judge
        every = stages(plan, args.shards, out, replay=replay)
        known = {s.name for s in every}
        unknown = sorted(set(args.only or ()) - known)
        if unknown:
            raise KitInputError(f"no stage {', '.join(unknown)} (stages: {', '.join(sorted(known))})")
    except KitInputError as e:
        print(f"make evals: {e}", file=sys.stderr)
        return 2
    chosen = [s for s in every if wanted is None or s.name in wanted]
    return evaluate(plan, chosen, out, baseline_store=baseline)


def checked_out(out: Path, name: str) -> Path:
    """The output folder, made if need be; a file there, or a folder that cannot be made, is bad input
    naming the setting."""
    if out.exists() and not out.is_dir():
        raise KitInputError(f"{name}={out}: not a folder (the summary, reports and logs go in it)")
    try:
        for sub in (out, out / "logs", out / "promptfoo"):
            sub.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KitInputError(f"{name}={out}: cannot make the folder: {e.strerror or e}") from None
    return out


def checked_baseline(path: Path | None, name: str) -> Path | None:
    """A base branch's store to compare against, opened as `kit report` opens a store: a file that is not a
    store, or a store a newer kit wrote, is bad input naming the setting, before anything is copied. None
    when none is given, or the file is not there (CI's first run has no base store: said, not an error)."""
    if path is None:
        return None
    if not path.exists():
        print(f"make evals: {name}={path}: no such store; comparing with this store's own runs")
        return None
    if path.is_dir():
        raise KitInputError(f"{name}={path}: a folder, not a store file")
    try:
        with open_store(path).connect(merge=False):
            pass
    except KitInputError as e:
        raise KitInputError(f"{name}={path}: {e}") from None
    return path


def slots_in(out: Path) -> Path:
    """The folder of the slots every stage's processes share (kit.runner.slots), made if need be."""
    slots = (out / "slots").resolve()
    slots.mkdir(parents=True, exist_ok=True)
    return slots


def stage_env(plan: Plan, out: Path) -> dict[str, str]:
    """The environment of the tools' own commands: the plan's document (KIT_PLAN: its slots, the one shared
    cap on the agent's calls in flight, among its settings), each tool starting a run of its own under this
    invocation's evals id, nothing leaving the machine."""
    # Each tool's run gets an id of its own; only the stages that judge the kit stage's runs get them.
    if plan.settings.slots_dir is None:
        plan = plan.derive(slots_dir=slots_in(out))
    env = child_env(plan.derive(run_id=None, replay_runs=None))
    env.update(
        {"DEEPEVAL_TELEMETRY_OPT_OUT": "1", "DEEPEVAL_UPDATE_WARNING_OPT_IN": "0", "PYTHONDONTWRITEBYTECODE": "1"}
    )
    # Logs are read by people and grepped: no colour codes (Rich, Node and pytest all honour these).
    env.update({"NO_COLOR": "1", "FORCE_COLOR": "0", "PY_COLORS": "0", "TERM": "dumb"})
    env.pop("CLICOLOR_FORCE", None)
    return env


def evaluate(plan: Plan, chosen: list[Stage], out: Path, *, baseline_store: Path | None = None) -> int:
    """Run the stages (built from `plan`, whose evals id every run they write carries), then summarise and
    gate what they wrote. 0 when every gated run passes its gate and no stage broke (a crash, a time-out, or
    a run it should have written missing from the store); 2 when a required stage (lint) failed, and nothing
    after it ran; else 1."""
    logs = out / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    (out / "promptfoo").mkdir(parents=True, exist_ok=True)
    env = stage_env(plan, out)
    started = time.perf_counter()
    # The required stages (lint) first: bad input stops the build before the store is touched.
    required = [s for s in chosen if s.required]
    results = run_stages(required, env, logs)
    stopped = next((r for r in results if r.code != 0), None)
    if stopped is not None:
        return _stopped(stopped, out)
    store = open_store(plan.store)
    try:
        if baseline_store is not None:
            print(f"==> baseline: {import_runs(store, baseline_store)} runs copied from {baseline_store}")
        with store.connect() as con:
            before = q.run_ids(con)
    except KitInputError as e:  # the store is not one this kit can write (a folder, a newer kit's, not DuckDB)
        print(f"make evals: {e}", file=sys.stderr)
        return 2
    results += run_stages([s for s in chosen if not s.required], env, logs)
    wall = time.perf_counter() - started

    with store.connect() as con:
        data = collect(con, before)
        suites = [
            junit.SuiteRows(r, q.case_runs(con, r["run_id"]), q.unpassed_checks(con, r["run_id"])) for r in data.runs
        ]
        baselines = baselines_for(con, [r["run_id"] for r in data.runs], plan.settings.gates)
    (out / "junit.xml").write_text(junit.render(suites))
    # `latest`, and `kit gate` / `kit report` / `kit compare` without a run, now mean these runs.
    q.last_evals_file(store.path).write_text(
        json.dumps({"gated": [r["run_id"] for r in data.gated], "controls": _controls(data)}, indent=1)
    )
    broken = _broken(results, data)
    try:
        policy = plan.gate_policy
        floors, notes = case_floors(Path(plan.cases), plan.settings.invariants)
        bad_rules = None
    except KitInputError as e:
        bad_rules, notes = e, []
    # The gate once: its verdict opens the report, and is what this command prints and exits on.
    judged = (
        {} if bad_rules else {r["run_id"]: _judge(store, r, baselines[r["run_id"]], policy, floors) for r in data.gated}
    )
    report = _report(plan, store, data, baselines, out, _merge_verdict(data, judged, broken, bad_rules))
    text = summary_text(data, results, str(report) if report else None, wall=wall)
    print(text)
    (out / "summary.txt").write_text(text)
    if report:
        print(f"HTML report: {report}; JUnit XML: {out / 'junit.xml'}; summary: {out / 'summary.txt'}")
    print("\n== gate")
    if bad_rules is not None:
        print(f"make evals: {bad_rules}", file=sys.stderr)
        return 2
    for n in notes:
        print(f"  note: {n}")
    verdicts = [_gate(r, judged[r["run_id"]]) for r in data.gated]
    for name, why in broken:
        print(f"make evals: stage {name} broke: {why}; see {logs / (name + '.log')}", file=sys.stderr)
    if not data.runs:
        print("make evals: no run reached the store", file=sys.stderr)
    ok = bool(data.runs) and not broken and all(verdicts)
    print("make evals: PASSED" if ok else "make evals: FAILED")
    return 0 if ok else 1


def _controls(data: Collected) -> list[str]:
    return [r["run_id"] for r in data.runs if q.is_control(r)]


STOP_LINES = 30  # lines of a required stage's log shown when it stops the build


def _stopped(result: StageResult, out: Path) -> int:
    """A required stage failed: its problems (each naming file, case and key), and nothing else ran. The
    summary says so, never that the cases are valid."""
    lines = [ln for ln in result.log.read_text(errors="replace").splitlines() if ln and not ln.startswith(("$ ", "("))]
    shown = lines[:STOP_LINES]
    if len(lines) > STOP_LINES:
        shown.append(f"... {len(lines) - STOP_LINES} more lines: {result.log}")
    text = "\n".join(
        [
            "",
            f"make evals: stopped at {result.stage.name} ({result.stage.note}): {result.outcome}; no later stage "
            "ran, no agent was called",
            *(f"  {ln}" for ln in shown),
            "make evals: FAILED (bad input: fix it, then run again)",
        ]
    )
    print(text, file=sys.stderr)
    (out / "summary.txt").write_text(text + "\n")
    return 2


def _report(
    plan: Plan, store: Store, data: Collected, baselines: dict[str, str | None], out: Path, verdict: Any = None
) -> Path | None:
    """One HTML report of every run this invocation wrote, with the kit's run beside its baseline; the same
    comparison as Markdown for a PR comment. `verdict`: the gate's on this invocation, which both open with."""
    from kit.commands.report import ReportRequest, report

    kit_run = next((r["run_id"] for r in reversed(data.runs) if r["source"] == "kit"), None)
    if not kit_run:
        return None
    base = baselines.get(kit_run)
    request = ReportRequest(
        store=store.path,
        run=kit_run,
        runs=tuple(r["run_id"] for r in data.runs),
        html=out / "report.html",
        compare=(base, kit_run) if base else None,
        md=out / "compare.md" if base else None,
        cases=Path(plan.cases),
        gates=plan.settings.gates,
        text=False,
        verdict=verdict,
    )
    try:
        return report(request).html
    except KitInputError as e:
        print(f"make evals: no HTML report: {e}", file=sys.stderr)
        return None


GATE_LINES = 5  # problems shown per run; `kit gate --run ID` lists them all


def baselines_for(con: Any, run_ids: list[str], gates: Path) -> dict[str, str | None]:
    """Each run's baseline: never an outage, by the share of errored attempts the gate policy allows (the
    default share when the policy cannot be read: the gate then says what is wrong with it)."""
    try:
        share = load_policy(gates).baseline.max_error_share
    except KitInputError:
        share = q.MAX_ERROR_SHARE
    return {run_id: q.baseline_run(con, run_id, share) for run_id in run_ids}


def _judge(store: Store, run: dict[str, Any], baseline: str | None, policy: Any, floors: dict[str, float]) -> Any:
    """The gate on one run (kit.commands.gate.gate_run, what `kit gate` prints), or why it could not judge it."""
    from kit.commands.gate import gate_run

    try:
        return gate_run(store, run["run_id"], policy, floors, baseline=baseline)
    except (q.RunNotFound, KitInputError) as e:
        return f"gate could not judge run {run['run_id']}: {e}"


def _merge_verdict(data: Collected, judged: dict[str, Any], broken: list[tuple[str, str]], bad_rules: Any) -> Any:
    """The verdict the report opens with: the gate on each run, and what else fails this command (a stage
    that broke, rules that could not be read, no run at all)."""
    from kit.commands.report import run_verdict
    from kit.report.verdict_view import MergeVerdict

    runs = tuple(run_verdict(v) for v in judged.values() if not isinstance(v, str))
    others = [v for v in judged.values() if isinstance(v, str)]
    others += [f"stage {name} broke: {why}" for name, why in broken]
    if bad_rules is not None:
        others.append(f"the gate could not read its rules: {bad_rules}")
    if not data.runs:
        others.append("no run reached the store")
    return MergeVerdict(runs, tuple(others))


def _gate(run: dict[str, Any], result: Any) -> bool:
    """One run's gate (`_judge`), in a few lines: a red team's hundreds of problems are counted, the first
    few shown (the summary above has them grouped by check)."""
    who = f" [{run.get('agent') or ''}]" if run.get("agent") else ""
    if isinstance(result, str):
        print(f"  {result}{who}")
        return False
    print(f"  {result.headline}{who}")
    for note in result.context:  # the rules it was judged by, the baseline and why
        print(f"    note: {note[:300]}")
    for problem in result.problems[:GATE_LINES]:
        print(f"    - {problem[:200]}")
    if len(result.problems) > GATE_LINES:
        print(f"    ... {len(result.problems) - GATE_LINES} more: kit gate --run {run['run_id']}")
    return result.passed


def _broken(results: list[StageResult], data: Collected) -> list[tuple[str, str]]:
    """Stages that broke, each with why: exited with a code that is neither success nor a judged failure
    (a crash, a time-out, bad input), or left out a run it must write (a tool that died, an ingest that
    failed). Either fails the build, whatever the other stages wrote."""
    out: list[tuple[str, str]] = []
    for r in results:
        missing = missing_runs(r, data)
        if r.broke:
            out.append((r.stage.name, "timed out" if r.code == TIMED_OUT else f"exit {r.code}"))
        elif missing:
            out.append((r.stage.name, f"no {', no '.join(missing)} run reached the store"))
    return out
