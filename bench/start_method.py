"""Were the reference agent's forked workers worth keeping? The golden suite x N runs of the reference agent
through `run_suite` (process pool) two ways, interleaved, each round in fresh interpreters:

- `fork`: the kit as of REV (default 56de29d, the last with the fast path): on Linux, forked workers ran the
  agent and judged it in the same process;
- `spawn`: this checkout, as on every platform: spawned hosts that import the agent by name and are given
  the cases as the agent sees them; every trace is judged in the runner.

    .venv/bin/python bench/start_method.py [--runs 20] [--rounds 7] [--baseline REV] [--json FILE]

Prints the medians of the suite's wall time and CPU time (the runner and its children) and the ratios
spawn/fork. Measured 2026-12-01 (x 20, 7 rounds each): 1.12x the wall time and 1.22x the CPU of the forked
workers on a lightly loaded machine, 0.67x and 0.94x under heavier load (the same checkout's two paths):
at most ~0.7 s on 1,220 runs, so the kit forks nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from baseline import extract

ROOT = Path(__file__).resolve().parents[1]

ONE = """
import json, resource, sys, time
t0 = time.perf_counter()
from kit.case import load_suite
from kit.runner import Job, RunOptions, run_suite
from kit.runner.agents import reference_agent

runs = int(sys.argv[1])
suite = load_suite(sys.argv[2])
jobs = [Job(c, a) for c in suite.cases for a in range(runs)]
def cpu():
    return sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))
c1, t1 = cpu(), time.perf_counter()
outs = run_suite(jobs, reference_agent(), RunOptions(mode="process", timeout=60))
t2, c2 = time.perf_counter(), cpu()
assert len(outs) == len(jobs)
print(json.dumps({"runs": len(outs), "passed": sum(o.case_run.passed for o in outs),
                  "errors": sum(o.case_run.error is not None for o in outs), "suite_s": t2 - t1, "total_s": t2 - t0,
                  "cpu_s": c2 - c1, "kit": __import__("kit").__file__}))
"""


def once(runs: int, env: dict[str, str], cwd: str) -> dict:
    # Not from the checkout's folder: `python -c` imports from the working folder first, and the baseline
    # must come from PYTHONPATH.
    out = subprocess.run(
        [sys.executable, "-c", ONE, str(runs), str(ROOT / "golden")],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **env},
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--baseline", default="56de29d", metavar="REV", help="the kit with the forked fast path")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    if sys.platform != "linux":
        print("the forked fast path ran on Linux only: nothing to compare here")
        return 0
    tmp = tempfile.TemporaryDirectory(prefix="kit-start-bench-")
    base, here = Path(tmp.name) / "base", Path(tmp.name) / "run"
    extract(args.baseline, base)
    here.mkdir()
    envs = {"fork": {"PYTHONPATH": str(base)}, "spawn": {}}
    times: dict[str, list[float]] = {"fork": [], "spawn": []}
    cpus: dict[str, list[float]] = {"fork": [], "spawn": []}
    seen: dict[str, dict] = {}
    for r in range(args.rounds):
        order = ("fork", "spawn") if r % 2 == 0 else ("spawn", "fork")
        for start in order:
            got = once(args.runs, envs[start], str(here))
            if not got["kit"].startswith(str(base if start == "fork" else ROOT)):
                raise SystemExit(f"{start}: ran the kit in {got['kit']}, not the one meant")
            times[start].append(got["suite_s"])
            cpus[start].append(got["cpu_s"])
            if start in seen and (got["passed"], got["errors"]) != (seen[start]["passed"], seen[start]["errors"]):
                raise SystemExit(f"{start}: verdicts differ between rounds: {got} vs {seen[start]}")
            seen[start] = got
    if (seen["fork"]["passed"], seen["fork"]["errors"]) != (seen["spawn"]["passed"], seen["spawn"]["errors"]):
        print(f"note: the two revisions' verdicts differ (checks changed since {args.baseline}?): {seen}")
    fork, spawn = statistics.median(times["fork"]), statistics.median(times["spawn"])
    fork_cpu, spawn_cpu = statistics.median(cpus["fork"]), statistics.median(cpus["spawn"])
    figures = {
        "date": time.strftime("%Y-%m-%d"),
        "runs": seen["fork"]["runs"],
        "rounds": args.rounds,
        "fork_s": round(fork, 3),
        "spawn_s": round(spawn, 3),
        "spawn_over_fork": round(spawn / fork, 2),
        "fork_cpu_s": round(fork_cpu, 3),
        "spawn_cpu_s": round(spawn_cpu, 3),
        "spawn_over_fork_cpu": round(spawn_cpu / fork_cpu, 2),
        "fork_all_s": [round(t, 3) for t in times["fork"]],
        "spawn_all_s": [round(t, 3) for t in times["spawn"]],
    }
    print(
        f"golden suite x {args.runs} ({figures['runs']} runs), median of {args.rounds} interleaved rounds: "
        f"fork {fork:.2f} s, spawn {spawn:.2f} s: spawn/fork {spawn / fork:.2f}x; CPU (the runner and its "
        f"children) fork {fork_cpu:.2f} s, spawn {spawn_cpu:.2f} s: {spawn_cpu / fork_cpu:.2f}x"
    )
    if args.json:
        args.json.write_text(json.dumps({"baseline": args.baseline, **figures}, indent=1) + "\n")
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
