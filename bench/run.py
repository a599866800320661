"""Figures for `kit run`: the golden suite x 5 runs on the deterministic policy in replay mode.

    .venv/bin/python bench/run.py [--runs 5] [--cases golden]

Records cassettes once (a live run into a temporary folder), then times the replayed suite with each
pool (processes, threads, one process) side by side, each in a fresh interpreter: wall time, runs/s,
peak memory (the runner plus its workers), and the kit's own overhead, i.e. everything but the agent:
loading the cases, the pool, reading traces, every check, and writing the results to a DuckDB store.
Target: the suite x 5 in under 10 s on 2 cores, overhead under 5%.

    .venv/bin/python bench/run.py --baseline REV [--rounds 5] [--modes process]

The same suite in a checkout of REV (`git archive`, imported through PYTHONPATH) and in this one,
alternating, each round in fresh interpreters: medians of wall time and of the pool's time, and the
ratios this/REV. What shows that the reference agent's fast path did not get slower.

    .venv/bin/python bench/run.py --invoke [--rounds 5]

`invoke` beside the bare functions it wraps, in one process: what the split into call and judge costs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from baseline import extract

ROOT = Path(__file__).resolve().parents[1]


def one(mode: str, cases_path: str, runs: int, tapes: str, store_path: str) -> dict:
    """Time one configuration in this (fresh) interpreter."""
    t0 = time.perf_counter()
    from kit.case import load_suite
    from kit.runner import RunOptions, jobs_for, run_suite
    from kit.runner.agents import reference_agent
    from kit.runner.pool import default_workers
    from kit.store import open_store

    suite = load_suite(cases_path)
    jobs = jobs_for(suite.cases, runs)
    agent = reference_agent(replay=tapes)
    t_load = time.perf_counter() - t0

    workers = 1 if mode == "serial" else default_workers()
    t1 = time.perf_counter()
    outcomes = run_suite(jobs, agent, RunOptions(runs=runs, mode=mode, workers=workers, timeout=60))
    t_run = time.perf_counter() - t1

    t2 = time.perf_counter()
    store = open_store(store_path)
    run_id = store.start_run("kit", agent=agent.name, git_sha=None)
    store.record_many(run_id, [(o.case_run, o.trace) for o in outcomes])
    store.finish_run(run_id)
    store.close()
    t_store = time.perf_counter() - t2

    wall = time.perf_counter() - t0
    agent_s = sum(o.agent_s for o in outcomes)
    kit_s = sum(o.kit_s for o in outcomes)
    errors = [o.case_run.error for o in outcomes if o.case_run.error]
    peak_kb = (
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss + resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    capacity = wall * workers  # worker-seconds available; the agent's share of them is the useful work
    return {
        "mode": mode,
        "workers": workers,
        "cases": len(suite.cases),
        "runs": len(jobs),
        "errors": len(errors),
        "first_error": errors[0] if errors else None,
        "wall_s": wall,
        "runs_per_s": len(jobs) / wall,
        "peak_mb": peak_kb / 1024,
        "load_s": t_load,
        "run_s": t_run,
        "store_s": t_store,
        "agent_s": agent_s,
        "kit_per_run_s": kit_s,
        "overhead_share": 1 - agent_s / capacity,
        "check_share": kit_s / (agent_s + kit_s) if agent_s + kit_s else 0.0,
    }


def record(cases: str, tapes: str) -> None:
    from kit.case import load_suite
    from kit.runner import RunOptions, jobs_for, run_suite
    from kit.runner.agents import reference_agent

    suite = load_suite(cases)
    run_suite(jobs_for(suite.cases, 1), reference_agent(record=tapes), RunOptions(runs=1, workers=2))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--cases", default=str(ROOT / "golden"))
    p.add_argument("--modes", default="process,thread,serial")
    p.add_argument("--baseline", metavar="REV", help="compare with this git revision, interleaved")
    p.add_argument("--rounds", type=int, default=5, help="rounds of the comparison with --baseline")
    p.add_argument("--invoke", action="store_true", help="invoke beside the bare call, trace and checks")
    p.add_argument("--one", nargs=3, metavar=("MODE", "TAPES", "STORE"), help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.one:
        print(json.dumps(one(a.one[0], a.cases, a.runs, a.one[1], a.one[2])))
        return 0
    if a.baseline:
        return compare(a)
    if a.invoke:
        return invoke_cost(a)
    with tempfile.TemporaryDirectory() as tmp:
        tapes = Path(tmp) / "cassettes"
        tapes.mkdir()
        record(a.cases, str(tapes))
        rows = []
        for mode in a.modes.split(","):
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--runs",
                    str(a.runs),
                    "--cases",
                    a.cases,
                    "--one",
                    mode,
                    str(tapes),
                    str(Path(tmp) / f"{mode}.duckdb"),
                ],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
            )
            rows.append(json.loads(out.stdout))
    print(
        f"kit run: golden suite ({rows[0]['cases']} cases) x {a.runs} runs = {rows[0]['runs']} runs, "
        f"deterministic policy, replay mode, {os.cpu_count()} CPUs"
    )
    cols = [
        ("pool", "mode", "{}"),
        ("workers", "workers", "{}"),
        ("wall s", "wall_s", "{:.2f}"),
        ("runs/s", "runs_per_s", "{:.0f}"),
        ("peak MB", "peak_mb", "{:.0f}"),
        ("load s", "load_s", "{:.2f}"),
        ("pool s", "run_s", "{:.2f}"),
        ("store s", "store_s", "{:.2f}"),
        ("agent s", "agent_s", "{:.2f}"),
        ("checks s", "kit_per_run_s", "{:.2f}"),
        ("overhead", "overhead_share", "{:.1%}"),
        ("errors", "errors", "{}"),
    ]
    print("  ".join(f"{h:>9}" for h, _, _ in cols))
    for r in rows:
        print("  ".join(f"{f.format(r[k]):>9}" for _, k, f in cols))
    print("overhead = 1 - (time inside the agent) / (wall time x workers): loading, pool, traces, checks, store, idle")
    print("where the worker-seconds go (wall x workers):")
    for r in rows:
        cap = r["wall_s"] * r["workers"]
        parts = {
            "agent": r["agent_s"],
            "traces+checks": r["kit_per_run_s"],
            "loading cases": r["load_s"],
            "store": r["store_s"],
        }
        parts["pool, IPC, idle"] = max(cap - sum(parts.values()), 0.0)
        print(f"  {r['mode']:>8}: " + ", ".join(f"{k} {v / cap:.0%}" for k, v in parts.items()))
    for r in rows:
        if r["first_error"]:
            print(f"{r['mode']}: {r['errors']} runs errored, e.g. {r['first_error']}")
    return 0


def _side(checkout: Path | None, mode: str, a: argparse.Namespace, tapes: Path, store: Path) -> dict:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    if checkout is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(checkout), env.get("PYTHONPATH")) if p)
    argv = [sys.executable, __file__, "--runs", str(a.runs), "--cases", a.cases, "--one", mode, str(tapes), str(store)]
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout)


def invoke_cost(a: argparse.Namespace) -> int:
    """`invoke` (call, retries, slots, the measured latency, judge, the run's metrics) beside the three
    functions it wraps called bare (the agent under its timeout, the result read into a trace, the
    checks), on the reference agent replaying its cassettes, in this process, interleaved."""
    from kit.case import load_suite
    from kit.evaluate import evaluate
    from kit.runner import invoke
    from kit.runner.agents import reference_agent, to_trace
    from kit.runner.invoke import call_agent

    cases = [c for c in load_suite(a.cases).cases if not getattr(c, "is_multi_turn", False)]
    with tempfile.TemporaryDirectory() as tmp:
        record(a.cases, tmp)
        agent = reference_agent(replay=tmp)

        def bare(c: object) -> object:
            trace, _ = to_trace(call_agent(agent, c, 0, 60.0), c, 0, None)
            return evaluate(trace, c)

        def wrapped(c: object) -> object:
            return invoke(agent, c, 0, timeout=60.0)

        got: dict[str, list[float]] = {"bare": [], "invoke": []}
        for r in range(max(a.rounds, 1) * 2 + 1):
            pair = [("bare", bare), ("invoke", wrapped)]
            for name, fn in pair if r % 2 else pair[::-1]:
                t0 = time.perf_counter()
                for c in cases:
                    fn(c)
                got[name].append((time.perf_counter() - t0) / len(cases) * 1000)
    med = {k: statistics.median(v) for k, v in got.items()}
    print(f"one run of the reference agent, {len(cases)} single-turn cases, {len(got['bare'])} rounds interleaved:")
    print(f"  bare call + trace + checks: {med['bare']:.3f} ms/run; invoke: {med['invoke']:.3f} ms/run; ", end="")
    print(f"ratio {med['invoke'] / med['bare']:.2f}x")
    return 0


def compare(a: argparse.Namespace) -> int:
    """This checkout against `a.baseline`, interleaved (the order alternates every round)."""
    with tempfile.TemporaryDirectory() as tmp:
        old = extract(a.baseline, Path(tmp) / "baseline", paths=())
        tapes = Path(tmp) / "cassettes"
        tapes.mkdir()
        record(a.cases, str(tapes))
        for mode in a.modes.split(","):
            got: dict[str, list[dict]] = {"baseline": [], "this": []}
            for r in range(a.rounds):
                order = [("baseline", old), ("this", None)]
                for name, checkout in order if r % 2 == 0 else order[::-1]:
                    store = Path(tmp) / f"{name}-{mode}-{r}.duckdb"
                    got[name].append(_side(checkout, mode, a, tapes, store))
            med = {k: {f: statistics.median(x[f] for x in v) for f in ("wall_s", "run_s")} for k, v in got.items()}
            errors = {k: sum(x["errors"] for x in v) for k, v in got.items()}
            runs = got["this"][0]["runs"]
            print(
                f"kit run, reference agent, {mode} pool, {runs} runs, {a.rounds} rounds interleaved "
                f"({os.cpu_count()} CPUs): medians"
            )
            for k in ("baseline", "this"):
                label = a.baseline if k == "baseline" else "this checkout"
                print(f"  {label:>14}: wall {med[k]['wall_s']:.2f} s, pool {med[k]['run_s']:.2f} s, errors {errors[k]}")
            print(
                f"  this / {a.baseline}: wall {med['this']['wall_s'] / med['baseline']['wall_s']:.2f}x, "
                f"pool {med['this']['run_s'] / med['baseline']['run_s']:.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
