"""Time one reference-agent run, live (fresh DuckDB sandbox) beside replay (cassette, no database),
and the golden suite x 5 on each, with the oracle's evaluation timed separately.

    .venv/bin/python bench/agent.py
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

from kit.agent import run_agent
from kit.case import load_suite
from kit.evaluate import evaluate
from kit.trace import parse_trace

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 5


def main() -> None:
    cases = load_suite(ROOT / "golden" / "cases").cases
    run_agent("warm up", case_id="w")  # opens and seeds the process's DuckDB once
    rows = []
    for mode in ("live", "replay"):
        agent_s, eval_s, per_run = 0.0, 0.0, []
        for _ in range(REPEATS):
            for c in cases:
                tape = ROOT / "golden" / "cassettes" / f"{c.id}.json" if mode == "replay" else None
                t0 = time.perf_counter()
                trace = run_agent(c.input, case_id=c.id, context=c.context, cassette=tape)
                t1 = time.perf_counter()
                evaluate(parse_trace(trace), c)
                t2 = time.perf_counter()
                agent_s += t1 - t0
                eval_s += t2 - t1
                per_run.append((t1 - t0) * 1000)
        rows.append((mode, len(per_run), statistics.median(per_run), max(per_run), agent_s, eval_s))
    print(f"golden suite: {len(cases)} cases x {REPEATS} runs, one process")
    print(f"{'mode':8}{'runs':>6}{'median run ms':>15}{'max run ms':>12}{'agent s':>10}{'evaluate s':>12}")
    for mode, n, med, mx, a, e in rows:
        print(f"{mode:8}{n:>6}{med:>15.2f}{mx:>12.2f}{a:>10.2f}{e:>12.2f}")


if __name__ == "__main__":
    main()
