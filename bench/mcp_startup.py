"""`kit mcp replay` as an agent starts it: one stdio server process per session, beside a git revision's.

    .venv/bin/python bench/mcp_startup.py [--baseline 1cfa2f8] [--rounds 7] [--json FILE]

Each round, for this checkout and for the baseline (its `kit` from `git archive`, compiled once, first on
PYTHONPATH), in alternating order: the server started and stopped at once (stdin closed), and one session
through the real SDK client (initialize, tools/list, one call of a recorded tool) on
tests/data/mcp/shop.json. Printed: the median CPU time of the server process (user + sys, every fresh
process), and the ratio to the baseline. The machine is shared: ratios, not absolute times.
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

import anyio
from baseline import extract
from mcp import Client, StdioServerParameters

ROOT = Path(__file__).resolve().parent.parent
CASSETTE = ROOT / "tests" / "data" / "mcp" / "shop.json"
SERVER = [sys.executable, "-m", "kit.cli", "mcp", "replay", str(CASSETTE)]


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def start_and_stop(env: dict[str, str], cwd: str) -> float:
    proc = subprocess.Popen(SERVER, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env, cwd=cwd)  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{SERVER} exited {os.waitstatus_to_exitcode(status)}")
    return usage.ru_utime + usage.ru_stime


async def _session(env: dict[str, str], cwd: str) -> str:
    params = StdioServerParameters(command=SERVER[0], args=SERVER[1:], env=env, cwd=cwd)
    async with Client(params, cache=None) as client:
        tools = await client.list_tools()
        answer = await client.call_tool("lookup_order", {"order_id": "ORD-7"})
        return f"{len(tools.tools)} tools, {answer.content[0].text[:40]!r}"


def session(env: dict[str, str], cwd: str) -> tuple[float, str]:
    before = children_cpu()
    said = anyio.run(_session, env, cwd)
    return children_cpu() - before, said


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--baseline", default="1cfa2f8", metavar="REV")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", type=Path, help="also write the figures here")
    args = ap.parse_args()
    base_env = {k: v for k, v in os.environ.items() if not k.startswith("KIT_")}
    with tempfile.TemporaryDirectory(prefix="kit-mcp-bench-") as tmp:
        old = str(extract(args.baseline, Path(tmp) / "baseline"))
        envs = {"kit": base_env, "baseline": {**base_env, "PYTHONPATH": old}}
        cpu: dict[tuple[str, str], list[float]] = {}
        said: dict[str, str] = {}
        load = os.getloadavg()[0]
        for r in range(args.rounds + 1):  # round 0 warms the caches; not counted
            for side in ("kit", "baseline") if r % 2 == 0 else ("baseline", "kit"):
                # Run from a folder of its own: `python -m` puts the working directory first on sys.path,
                # so run from this checkout both sides would import this checkout's kit.
                start = start_and_stop(envs[side], tmp)
                used, said[side] = session(envs[side], tmp)
                if r:
                    cpu.setdefault((side, "start"), []).append(start)
                    cpu.setdefault((side, "session"), []).append(used)
    if said["kit"] != said["baseline"]:
        raise SystemExit(f"the two servers answered differently: {said}")
    figures: dict[str, object] = {
        "date": time.strftime("%Y-%m-%d"),
        "rounds": args.rounds,
        "baseline": args.baseline,
        "load": [round(load, 1), round(os.getloadavg()[0], 1)],
    }
    print(f"kit mcp replay, server CPU s, median of {args.rounds} interleaved rounds ({said['kit']})")
    for what, label in (("start", "start and stop"), ("session", "one session")):
        k, b = (statistics.median(cpu[(side, what)]) for side in ("kit", "baseline"))
        print(f"  {label:16} kit {k:.3f}   {args.baseline} {b:.3f}   {k / b:.2f}x")
        figures[what] = {"kit_s": round(k, 3), "baseline_s": round(b, 3), "ratio": round(k / b, 2)}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
