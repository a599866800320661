"""Is the reference agent's forked fast path worth keeping on Linux? The golden suite x N runs of the
reference agent through `run_suite` (process pool) two ways, interleaved, each round in fresh interpreters:

- `fork`: the fast path, Linux only: forked workers run the agent and judge it in the same process;
- `spawn`: what every other platform does (and what a user's agent always does): spawned hosts that import
  the agent by name and are given the cases as the agent sees them; every trace is judged in the runner.

    .venv/bin/python bench/start_method.py [--runs 5] [--rounds 5] [--json bench/start_method.json]

Prints the medians of the suite's wall time and the ratio spawn/fork; the fast path stays only if the
ratio says it is worth it (kit.runner.pool.FORK_SAFE).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

ONE = """
import json, sys, time
t0 = time.perf_counter()
from kit.case import load_suite
from kit.runner import Job, RunOptions, run_suite
from kit.runner import pool
from kit.runner.agents import reference_agent

start, runs = sys.argv[1], int(sys.argv[2])
pool.FORK_SAFE = start == "fork"
suite = load_suite("golden")
jobs = [Job(c, a) for c in suite.cases for a in range(runs)]
t1 = time.perf_counter()
outs = run_suite(jobs, reference_agent(), RunOptions(mode="process", timeout=60))
t2 = time.perf_counter()
assert len(outs) == len(jobs)
print(json.dumps({"runs": len(outs), "passed": sum(o.case_run.passed for o in outs),
                  "errors": sum(o.case_run.error is not None for o in outs), "suite_s": t2 - t1, "total_s": t2 - t0}))
"""


def once(start: str, runs: int) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", ONE, start, str(runs)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    if sys.platform != "linux":
        print("fork is the fast path on Linux only: nothing to compare here")
        return 0
    times: dict[str, list[float]] = {"fork": [], "spawn": []}
    seen: dict[str, dict] = {}
    for r in range(args.rounds):
        order = ("fork", "spawn") if r % 2 == 0 else ("spawn", "fork")
        for start in order:
            got = once(start, args.runs)
            times[start].append(got["suite_s"])
            if start in seen and (got["passed"], got["errors"]) != (seen[start]["passed"], seen[start]["errors"]):
                raise SystemExit(f"{start}: verdicts differ between rounds: {got} vs {seen[start]}")
            seen[start] = got
    if (seen["fork"]["passed"], seen["fork"]["errors"]) != (seen["spawn"]["passed"], seen["spawn"]["errors"]):
        raise SystemExit(f"fork and spawn disagree: {seen}")
    fork, spawn = statistics.median(times["fork"]), statistics.median(times["spawn"])
    figures = {
        "date": time.strftime("%Y-%m-%d"),
        "runs": seen["fork"]["runs"],
        "rounds": args.rounds,
        "fork_s": round(fork, 3),
        "spawn_s": round(spawn, 3),
        "spawn_over_fork": round(spawn / fork, 2),
        "fork_all_s": [round(t, 3) for t in times["fork"]],
        "spawn_all_s": [round(t, 3) for t in times["spawn"]],
    }
    print(
        f"golden suite x {args.runs} ({figures['runs']} runs), median of {args.rounds} interleaved rounds: "
        f"fork {fork:.2f} s, spawn {spawn:.2f} s: spawn/fork {spawn / fork:.2f}x"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
