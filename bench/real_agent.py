"""A model-backed agent's cost in the kit's runner: a stand-in of fixed latency, at latencies 0, 0.4 and 2 s
and concurrency 1, 8 and 32, through the real runner (`run_suite`, `process` pool as `kit run` uses).

    .venv/bin/python bench/real_agent.py [--latencies 0,0.4,2] [--concurrency 1,8,32] [--kinds sync,async]

The agent (kit.doubles.slow_agent) sleeps (`time.sleep` for the sync one, `asyncio.sleep` for the
`async def` one) and counts its calls and its calls in flight under an flock, across processes. Per row:
the calls, the peak in flight, the wall time, the latency cost (the wall time minus the same suite's
with a 0 s agent) and its ratio to the ideal, calls x latency / concurrency. Suites are sized so the ideal
is a few seconds (small ones for the 2 s agent): the whole table takes under 3 minutes on 2 cores.
Target: a 0.4 s agent at concurrency 8: peak <= 8 and latency cost <= 1.5x ideal.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def calls_for(latency: float, concurrency: int) -> int:
    """Enough calls to fill every slot a few times, few enough that the ideal stays near 4 s."""
    if latency <= 0:
        return 96
    return max(min(round(4 * concurrency / latency), 96), 2 * concurrency if latency < 1 else 4)


def timed(kind: str, latency: float, concurrency: int, calls: int, folder: Path) -> tuple[float, int, int, int]:
    """(wall s, calls counted, peak in flight, error runs) of one suite of `calls` runs."""
    from kit.case import load_suite
    from kit.doubles import slow_agent
    from kit.runner import RunOptions, jobs_for, run_suite
    from kit.runner.agents import load_agent

    counts = Path(tempfile.mkdtemp(dir=folder))
    os.environ["SLOW_AGENT_COUNTS"] = str(counts)
    os.environ["SLOW_AGENT_LATENCY"] = str(latency)
    cases = folder / "cases.yaml"
    cases.write_text(f'id: echo\ninput: "hi"\nruns: {calls}\nchecks: [{{type: contains, text: echo}}]\n')
    jobs = jobs_for(load_suite(cases).cases)
    agent = load_agent(f"kit.doubles.slow_agent:{kind}_agent")
    t0 = time.perf_counter()
    outs = run_suite(jobs, agent, RunOptions(mode="process", concurrency=concurrency, timeout=60))
    wall = time.perf_counter() - t0
    errors = sum(o.case_run.outcome != "pass" for o in outs)
    return wall, slow_agent.read(counts, "calls"), slow_agent.read(counts, "peak"), errors


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--latencies", default="0,0.4,2")
    p.add_argument("--concurrency", default="1,8,32")
    p.add_argument("--kinds", default="sync,async")
    a = p.parse_args()
    latencies = [float(x) for x in a.latencies.split(",")]
    levels = [int(x) for x in a.concurrency.split(",")]
    os.environ.pop("KIT_SLOTS_DIR", None)
    print(f"kit run on a fixed-latency agent, process pool, {os.cpu_count()} CPUs")
    head = f"{'agent':>6} {'latency s':>9} {'conc':>5} {'calls':>6} {'peak':>5} {'wall s':>7} {'0 s wall':>8} "
    print(head + f"{'cost s':>7} {'ideal s':>7} {'cost/ideal':>10}")
    verdict = None
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for kind in a.kinds.split(","):
            for latency in latencies:
                for c in levels:
                    n = calls_for(latency, c)
                    base, _, _, _ = timed(kind, 0.0, c, n, folder) if latency > 0 else (0.0, 0, 0, 0)
                    wall, calls, peak, errors = timed(kind, latency, c, n, folder)
                    if errors:
                        print(f"{kind} {latency} s x {c}: {errors} runs did not pass", file=sys.stderr)
                    ideal = calls * latency / c
                    cost = wall - base if latency > 0 else 0.0
                    ratio = f"{cost / ideal:.2f}" if ideal else "-"
                    print(
                        f"{kind:>6} {latency:>9g} {c:>5} {calls:>6} {peak:>5} {wall:>7.2f} "
                        f"{(base if latency > 0 else wall):>8.2f} {cost:>7.2f} {ideal:>7.2f} {ratio:>10}",
                        flush=True,
                    )
                    if latency == 0.4 and c == 8 and kind == "sync":
                        verdict = peak <= 8 and cost <= 1.5 * ideal
    print("cost = wall - the same suite's wall with a 0 s agent; ideal = calls x latency / concurrency")
    print(f"whole table: {time.perf_counter() - t_all:.0f} s")
    if verdict is not None:
        print(f"target (0.4 s agent, concurrency 8: peak <= 8, cost <= 1.5x ideal): {'met' if verdict else 'MISSED'}")
    return 0 if verdict in (None, True) else 1


if __name__ == "__main__":
    sys.exit(main())
