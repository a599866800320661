"""`make evals` on a stand-in for a model-backed agent: how many calls, how many in flight, what latency costs.

    .venv/bin/python bench/evals_agent.py [--latency 0.4] [--concurrency 8] [--cases 10] [--runs 3]

The agent waits `latency` seconds per call (a model answering) and counts, across every process that calls
it (the kit's runner's hosts, Promptfoo's Python workers), its calls and the most it ever had in flight.
`make evals AGENT=... CASES=... CONCURRENCY=...` runs twice in one go, once with a 0 s agent and once with
the given latency, on the same cases; the latency cost is the difference of their wall times, and its ideal
is calls x latency / concurrency. Prints the calls beside golden attempts + attacks, the peak in flight
beside the cap, and the latency cost over its ideal.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

AGENT = '''
"""A desk agent that takes BENCH_LATENCY seconds per call and counts its calls and calls in flight."""
import fcntl
import json
import os
import time

STATE = os.environ["BENCH_STATE"]


def _count(delta):
    with open(STATE, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.seek(0)
        data = json.loads(f.read() or '{"calls": 0, "now": 0, "peak": 0}')
        data["now"] += delta
        if delta > 0:
            data["calls"] += 1
            data["peak"] = max(data["peak"], data["now"])
        f.seek(0)
        f.truncate()
        f.write(json.dumps(data))


def run(text):
    _count(1)
    try:
        time.sleep(float(os.environ.get("BENCH_LATENCY", "0")))
    finally:
        _count(-1)
    return _answer(text)


async def arun(text):
    import asyncio

    _count(1)
    try:
        await asyncio.sleep(float(os.environ.get("BENCH_LATENCY", "0")))
    finally:
        _count(-1)
    return _answer(text)


def _answer(text):
    answer = "Order ORD-1 has shipped." if "ORD-" in text else "I can only help with orders."
    return [
        {"role": "user", "content": text},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "lookup_order", "arguments": json.dumps({"order_id": "ORD-1"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"status": "shipped"})},
        {"role": "assistant", "content": answer},
    ]
'''


def cases_yaml(n: int, runs: int) -> str:
    rows = []
    for i in range(n):
        rows.append(
            f"- id: order-{i}\n  input: 'Where is my order ORD-{i}?'\n  runs: {runs}\n"
            "  checks:\n    - {type: called, tool: lookup_order}\n    - {type: contains, text: shipped}\n"
        )
    return "".join(rows)


def one(tmp: Path, latency: float, concurrency: int, fn: str = "run") -> dict[str, float]:
    state = tmp / f"state-{latency}.json"
    state.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
    env.update(
        BENCH_STATE=str(state),
        BENCH_LATENCY=str(latency),
        PYTHONPATH=str(tmp),
        KIT_STORE=str(tmp / f"evals-{latency}.duckdb"),
    )
    out = tmp / f"out-{latency}"
    argv = [
        "make",
        "--no-print-directory",
        "evals",
        f"AGENT=bench_desk:{fn}",
        f"CASES={tmp / 'cases.yaml'}",
        f"CONCURRENCY={concurrency}",
        f"EVALS_OUT={out}",
    ]
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    wall = time.perf_counter() - started
    if "make evals: PASSED" not in proc.stdout:
        sys.exit(f"make evals failed at latency {latency}:\n{proc.stdout[-3000:]}\n{proc.stderr[-2000:]}")
    counted = json.loads(state.read_text())
    import duckdb

    con = duckdb.connect(str(tmp / f"evals-{latency}.duckdb"), read_only=True)
    attempts, attacks = con.execute(
        """SELECT count(*) FILTER (WHERE r.source = 'kit'), count(*) FILTER (WHERE r.kind = 'redteam')
           FROM case_results c JOIN runs r USING (run_id)"""
    ).fetchone()
    con.close()
    return {"wall": wall, "calls": counted["calls"], "peak": counted["peak"], "attempts": attempts, "attacks": attacks}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--latency", type=float, default=0.4)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--cases", type=int, default=10)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--async", dest="use_async", action="store_true", help="an `async def` agent")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-evals-agent-") as d:
        tmp = Path(d)
        (tmp / "bench_desk.py").write_text(AGENT)
        (tmp / "cases.yaml").write_text(cases_yaml(args.cases, args.runs))
        fn = "arun" if args.use_async else "run"
        fast = one(tmp, 0.0, args.concurrency, fn)
        slow = one(tmp, args.latency, args.concurrency, fn)
    expected = slow["attempts"] + slow["attacks"]
    cost = slow["wall"] - fast["wall"]
    ideal = slow["calls"] * args.latency / args.concurrency
    kind = "async def" if args.use_async else "sync"
    print(f"make evals, {kind} agent of {args.latency:g} s per call, concurrency {args.concurrency}")
    print(f"  calls:          {slow['calls']} (attempts {slow['attempts']} + attacks {slow['attacks']} = {expected})")
    print(f"  peak in flight: {slow['peak']} (cap {args.concurrency})")
    print(f"  wall:           {fast['wall']:.1f} s with a 0 s agent, {slow['wall']:.1f} s at {args.latency:g} s a call")
    print(f"  latency cost:   {cost:.1f} s; ideal {ideal:.1f} s (calls x latency / concurrency): {cost / ideal:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
